"""ARIB-LGSTORE-002 (issue 35): every store operation, one at a time, is a round trip an
application can build on: put, get, delete, search (namespace prefixes, every documented filter
operator, limit and offset), list_namespaces (prefix, suffix, wildcards, max_depth, limit and
offset) and a batch of mixed operations (one result per op, in op order), read again through a
second instance where one can open the store (it runs its own setup() on the existing store);
a class that serves only the sync half refuses ``abatch`` loudly.

The trial puts ``items`` items in each of seven namespaces (one label a string prefix of
another: ``("docs", "a")`` and ``("docs", "ab")``), overwrites some and deletes some (never the
first of a namespace), and judges every read against a plain model of what was acknowledged
(``arib.checks.langgraph._store``): what every store documents, not one store's order or extras. A
call that raises, or a store that cannot be opened or set up again, is a violation.
"""

from __future__ import annotations

from typing import Any

from arib.checks.base import CheckSpec, Param, Selector, TrialContext
from arib.checks.common import trials_param
from arib.checks.langgraph._contract import Problems, guarded
from arib.checks.langgraph._saver import store_call, store_of
from arib.checks.langgraph._store import Model, Ns, canon, judge_search, seen_items
from arib.ground.model import Trial
from arib.targets.langgraph.lanes import api_of

CHECK_ID = "ARIB-LGSTORE-002"
EVERYTHING = 10_000
SPACES: tuple[Ns, ...] = (("docs", "a"), ("docs", "ab"), ("docs", "a", "x"), ("docs", "b", "x"),
                          ("users", "u1", "prefs"), ("users", "u2", "prefs"),
                          ("users", "u2", "notes"))
PREFIXES: tuple[Ns, ...] = ((), ("docs",), ("docs", "a"), ("docs", "b"), ("users",),
                            ("users", "u2"), ("users", "u2", "notes"), ("zzz",))
# n takes these values in turn; the first item of each namespace (never deleted or
# overwritten) holds one of BOUNDS, so that every bound below is met exactly by some item
NUMBERS = (30, 50, 40, 29, 51, 31, 49, 41, 39, 60, 20, 19, 61, 10, 99)
BOUNDS = (50, 30, 40, 41, 20, 60, 49)
TAGS = ("red", "blue", "green")
FILTERS: tuple[dict[str, Any], ...] = (
    {"tag": "red"}, {"flag": True}, {"flag": False}, {"n": {"$gt": 50}}, {"n": {"$gte": 50}},
    {"n": {"$lt": 30}}, {"n": {"$lte": 30}}, {"n": {"$ne": 40}}, {"n": {"$eq": 41}},
    {"tag": {"$eq": "blue"}}, {"tag": {"$ne": "blue"}}, {"tags": ["t", "1"]},
    {"n": {"$gte": 20, "$lt": 60}}, {"tag": "green", "flag": False}, {"n": 49},
)
# (conditions, max_depth) of list_namespaces, each condition (match type, path)
LISTINGS: tuple[tuple[tuple[tuple[str, Ns], ...], int | None], ...] = (
    ((), None), ((("prefix", ("docs",)),), None), ((("prefix", ("docs", "a")),), None),
    ((("suffix", ("x",)),), None), ((("suffix", ("prefs",)),), None),
    ((("prefix", ("users", "*", "prefs")),), None), ((("suffix", ("*", "x")),), None),
    ((("prefix", ("users",)), ("suffix", ("notes",))), None), ((), 1), ((), 2),
    ((("prefix", ("docs",)),), 2), ((("suffix", ("zzz",)),), None),
)


def value_of(space: int, item: int, version: int) -> dict[str, Any]:
    """The value put for item ``item`` of namespace ``space`` at its ``version``-th put."""
    turn = space if item == 0 else space * 5 + item * 3 + version
    return {"n": BOUNDS[space] if item == 0 else NUMBERS[turn % len(NUMBERS)],
            "tag": TAGS[turn % 3], "flag": turn % 2 == 0,
            "tags": ["t", str(turn % 2)], "text": f"žluťoučký {space}/{item}/{version} 🐎",
            "nested": {"deep": [item, {"space": space}], "empty": {}}, "version": version}


async def run_trial(ctx: TrialContext) -> Trial:
    """One trial: every operation round-tripped and judged against the model."""
    problems = Problems()
    return await guarded(ctx, lambda: _trial(ctx, problems))


async def _trial(ctx: TrialContext, problems: Problems) -> Trial:
    handle = await ctx.open()
    store = store_of(handle)
    model = Model()
    wrong: list[str] = []
    await _write(ctx, store, model, ctx.params["items"])
    await _read_all(ctx, store, model, wrong, "")
    await _pages(ctx, store, model, wrong)
    await _batch(ctx, store, model, wrong)
    await _unserved_half(ctx, store, wrong)
    if handle.private_store:
        ctx.log(f"no second instance ({handle.private_store})")
    else:
        ctx.log("open a second instance on the store (its own setup()) and read everything again")
        other = store_of(await ctx.reopen(handle))
        await _read_all(ctx, other, model, wrong, "second instance: ")
    for text in wrong:
        problems.add("wrong", text)
    return problems.trial(ctx, "round_trip")


async def _write(ctx: TrialContext, store: Any, model: Model, items: int) -> None:
    """Put every item, overwrite some, delete some (never the first of a namespace)."""
    for s, ns in enumerate(SPACES):
        for i in range(items):
            await store_call(store, "put", ns, f"k{i}", value_of(s, i, 0))
            model.put(ns, f"k{i}", value_of(s, i, 0))
    changed = [(s, i) for s in range(len(SPACES)) for i in range(1, items)]
    ctx.rng.shuffle(changed)
    third = len(changed) // 3
    overwritten, deleted = changed[:third], changed[third:][:len(changed) // 4]
    ctx.log(f"put k0..k{items - 1} in each of {list(SPACES)}; overwrite {overwritten}; "
            f"delete {deleted} (namespace index, item)")
    for s, i in overwritten:
        await store_call(store, "put", SPACES[s], f"k{i}", value_of(s, i, 1))
        model.put(SPACES[s], f"k{i}", value_of(s, i, 1))
    for s, i in deleted:
        await store_call(store, "delete", SPACES[s], f"k{i}")
        model.put(SPACES[s], f"k{i}", None)


async def _read_all(ctx: TrialContext, store: Any, model: Model, wrong: list[str],
                    who: str) -> None:
    """get every key ever put, a full search of every prefix and filter, every listing."""
    ctx.log(f"{who}get every key; search every prefix (and () and ('docs',) with every "
            f"filter); list_namespaces with every condition and depth")
    for ns in SPACES:
        for i in range(ctx.params["items"]):
            got = await store_call(store, "get", ns, f"k{i}")
            _judge_get(model, ns, f"k{i}", got, f"{who}get {ns} k{i}", wrong)
    for prefix in PREFIXES:
        judge_search(model, prefix, None,
                     await store_call(store, "search", prefix, limit=EVERYTHING),
                     f"{who}search {prefix}", wrong)
    for prefix in ((), ("docs",)):
        for filter_ in FILTERS:
            judge_search(model, prefix, filter_,
                         await store_call(store, "search", prefix, filter=filter_,
                                          limit=EVERYTHING),
                         f"{who}search {prefix} filter {filter_}", wrong)
    for conditions, depth in LISTINGS:
        got = await store_call(store, "list_namespaces", **_listing_args(conditions, depth))
        want = model.namespaces(conditions, depth)
        if sorted(map(tuple, got or [])) != want or len(got or []) != len(want):
            wrong.append(f"{who}list_namespaces {conditions} max_depth={depth}: got "
                         f"{got!r:.160}, want {want!r:.160}")


def _listing_args(conditions: tuple[tuple[str, Ns], ...], depth: int | None,
                  **more: Any) -> dict[str, Any]:
    args: dict[str, Any] = dict(more, limit=more.get("limit", EVERYTHING))
    for match_type, path in conditions:
        args[match_type] = path
    if depth is not None:
        args["max_depth"] = depth
    return args


def _judge_get(model: Model, ns: Ns, key: str, got: Any, what: str, wrong: list[str]) -> None:
    want = model.items.get((ns, key))
    if want is None:
        if got is not None:
            wrong.append(f"{what}: deleted or never put, got {got!r:.120}")
        return
    if got is None:
        wrong.append(f"{what}: missing")
    elif not all(hasattr(got, name) for name in ("namespace", "key", "value")):
        wrong.append(f"{what}: got {got!r:.120}, not an item")
    elif (tuple(got.namespace), got.key, canon(got.value)) != (ns, key, canon(want)):
        wrong.append(f"{what}: got {tuple(got.namespace)} {got.key} {canon(got.value):.80}, "
                     f"want {canon(want):.80}")


async def _pages(ctx: TrialContext, store: Any, model: Model, wrong: list[str]) -> None:
    """Pages of ``limit`` items at offsets 0, limit, 2*limit, ... add up to the whole search,
    each item once; the default limit is 10; list_namespaces pages the same way."""
    for prefix, filter_ in (((), None), (("docs",), {"n": {"$gte": 30}})):
        size = 1 + ctx.rng.randrange(3)
        ctx.log(f"search {prefix} filter {filter_} in pages of {size}")
        want = model.search(prefix, filter_)
        seen: dict[tuple[Ns, str], str] = {}
        for page in range(len(want) // size + 2):
            found = seen_items(await store_call(store, "search", prefix, filter=filter_,
                                                limit=size, offset=page * size),
                               f"search {prefix} page {page}", wrong)
            expected = min(size, max(0, len(want) - page * size))
            if len(found) != expected:
                wrong.append(f"search {prefix} filter {filter_} limit {size} offset "
                             f"{page * size}: {len(found)} items, want {expected}")
            for where in set(found) & set(seen):
                wrong.append(f"search {prefix} pages of {size}: {where} on two pages")
            seen.update(found)
        if set(seen) != want:
            wrong.append(f"search {prefix} filter {filter_} in pages of {size}: the pages hold "
                         f"{len(seen)} items, want {len(want)}")
    found = seen_items(await store_call(store, "search", ("docs",)), "search ('docs',) with "
                       "the default limit", wrong)
    if len(found) != min(10, len(model.search(("docs",)))) or not set(found) <= model.search(
            ("docs",)):
        wrong.append(f"search ('docs',) with the default limit gave {len(found)} items")
    every = model.namespaces()
    size = 2 + ctx.rng.randrange(2)
    ctx.log(f"list_namespaces in pages of {size}")
    listed: list[Ns] = []
    for page in range(len(every) // size + 2):
        got = [tuple(ns) for ns in await store_call(store, "list_namespaces",
                                                    **_listing_args((), None, limit=size,
                                                                    offset=page * size))]
        if len(got) != min(size, max(0, len(every) - page * size)):
            wrong.append(f"list_namespaces limit {size} offset {page * size}: {got}")
        listed.extend(got)
    if sorted(listed) != every:
        wrong.append(f"list_namespaces in pages of {size}: {sorted(listed)}, want {every}")


async def _unserved_half(ctx: TrialContext, store: Any, wrong: list[str]) -> None:
    """A class that serves only the sync half refuses abatch loudly (NotImplementedError, as
    SqliteStore documents), never answering as if it had run the ops."""
    from langgraph.store.base import GetOp

    if api_of(store) != "sync":
        return
    ctx.log("abatch on a class that serves only the sync half: must raise NotImplementedError")
    try:
        answer = await store.abatch([GetOp(SPACES[0], "k0")])
    except NotImplementedError:
        return
    wrong.append(f"abatch of {type(store).__name__} (sync only) answered {answer!r:.80} "
                 f"instead of refusing")


async def _batch(ctx: TrialContext, store: Any, model: Model, wrong: list[str]) -> None:
    """One batch of mixed ops: one result per op, in op order, each what the model says
    (its reads touch no key or namespace its writes change)."""
    from langgraph.store.base import GetOp, ListNamespacesOp, MatchCondition, PutOp, SearchOp

    first, second, third = SPACES[0], SPACES[1], SPACES[4]
    gone = next(key for ns, key in sorted(model.items) if ns == first and key != "k0")
    new_value = {"n": 77, "tag": "red", "flag": True, "tags": [], "text": "nový"}
    filter_ = {"tag": {"$ne": "green"}}
    ops = [GetOp(first, "k0"), PutOp(("zzz", "new"), "b1", new_value),
           SearchOp(("users",), filter_, EVERYTHING, 0),
           ListNamespacesOp((MatchCondition("prefix", ("docs",)),), None, EVERYTHING, 0),
           GetOp(second, "never-put"), PutOp(first, gone, None), GetOp(third, "k0")]
    ctx.log(f"batch {[type(op).__name__ for op in ops]}: get {first} k0, put ('zzz', 'new') "
            f"b1, search ('users',) {filter_}, list prefix ('docs',), get {second} never-put, "
            f"delete {first} {gone}, get {third} k0")
    results = await store_call(store, "batch", ops)
    if not isinstance(results, list) or len(results) != len(ops):
        wrong.append(f"batch of {len(ops)} ops returned {results!r:.160}")
        return
    _judge_get(model, first, "k0", results[0], "batch result 0 (get)", wrong)
    for n in (1, 4, 5):
        if results[n] is not None:
            wrong.append(f"batch result {n} ({type(ops[n]).__name__}): {results[n]!r:.120}, "
                         f"want None")
    judge_search(model, ("users",), filter_, results[2], "batch result 2 (search)", wrong)
    want = model.namespaces([("prefix", ("docs",))])
    if not isinstance(results[3], list) or sorted(map(tuple, results[3])) != want:
        wrong.append(f"batch result 3 (list_namespaces): {results[3]!r:.160}, want {want}")
    _judge_get(model, third, "k0", results[6], "batch result 6 (get)", wrong)
    model.put(("zzz", "new"), "b1", new_value)
    model.put(first, gone, None)
    for ns, key in ((("zzz", "new"), "b1"), (first, gone)):
        _judge_get(model, ns, key, await store_call(store, "get", ns, key),
                   f"get {ns} {key} after the batch", wrong)


CHECK = CheckSpec(
    id=CHECK_ID,
    invariant="every store operation round-trips: put, get and delete; search by namespace "
    "prefix, with every documented filter operator, limit and offset; list_namespaces by "
    "prefix, suffix, wildcard, max_depth, limit and offset; a mixed batch's results in op "
    "order; the same read through a second instance",
    fault="none beyond the round trip: one label a string prefix of another, boundary values "
    "of every comparison, pages of 1 to 3 items, a batch of every op kind",
    params=(Param("items", 4, 2, 50, "items per namespace (7 namespaces)"), trials_param(1)),
    run_trial=run_trial,
    mutants=("lg_store_reference_suffix_as_prefix", "lg_store_reference_search_ignores_offset",
             "lg_store_memory_gte_is_gt", "lg_store_sqlite_ne_is_eq",
             "lg_store_memory_batch_results_by_kind"),
    generated=(Selector("lg-store-reference", "_fits", "flip_comparison"),
               Selector("lg-store-memory", "_does_match", "flip_comparison"),
               Selector("lg-store-memory", "_compare_values", "flip_comparison"),
               Selector("lg-store-sqlite-file", "SqliteStore._get_filter_condition",
                        "flip_comparison")),
    timeout_s=60.0,
    reference="lg-store-reference",
)
