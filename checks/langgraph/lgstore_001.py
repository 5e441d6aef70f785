"""ARIB-LGSTORE-001 (issue 14, "store put/search/delete racing across namespaces"): a store
check, run on the store lanes (it abstains on a checkpointer lane: ``store_of``). Its gates run
on our reference store, ``lg-store-reference`` (``CheckSpec.reference``), not on the family's
reference checkpointer. Each call goes through the half of the interface the lane serves
(``store_call``: a sync lane's in a worker thread).

Invariant: writers, each owning a namespace (``("arib", <seed>, "w1")``, ``("arib", <seed>,
"w10")``, ...: one name a string prefix of another), put and delete items, released together
with searchers that search each namespace while they write. Every search returns only items of
the namespace it names (never of another whose name merely starts the same) with the values
some put gave them; after all returned, searching each namespace gives exactly the items put
and not deleted, with their last values. A call with no answer in 10 s is hung (a violation).
"""

from __future__ import annotations

from typing import Any

import anyio

from arib.checks.base import Barrier, CheckSpec, Param, SchedulePlan, TrialContext, actors, describe
from arib.checks.common import trials_param
from arib.checks.langgraph._contract import guarded
from arib.checks.langgraph._saver import store_of
from arib.checks.langgraph._store import timed_call
from arib.ground.model import Counts, Trial
from arib.ground.selector import Selector

CHECK_ID = "ARIB-LGSTORE-001"
LIMIT = 10_000
# A call with no answer after this long is hung: evidence (the writer or searcher reports it),
# not a trial past the check's time limit (PostgresStore of -postgres 2.0.0 hangs here).
OP_TIMEOUT_S = 10.0


def namespaces(seed: int, writers: int) -> list[tuple[str, ...]]:
    """One namespace per writer; w1 is a string prefix of w10, w11, ... (when there are)."""
    return [("arib", f"{seed:x}", f"w{1 + w * 9 if w else 1}") for w in range(writers)]


async def run_trial(ctx: TrialContext) -> Trial:
    """One trial: writers put and delete in their namespaces while searchers search them.
    A store that cannot be opened or set up is a violation (``guarded``), not a harness
    error."""
    return await guarded(ctx, lambda: _trial(ctx))


async def _trial(ctx: TrialContext) -> Trial:
    writers, items = ctx.params["writers"], ctx.params["items"]
    store = store_of(await ctx.open())
    spaces = namespaces(ctx.seed, writers)
    plans = {ns: [(f"k{i}", {"v": f"{ns[-1]}-{i}-{r}"}) for i in range(items)
                  for r in range(2)] for ns in spaces}
    deleted = {ns: {f"k{i}" for i in range(items) if ctx.rng.random() < 0.3} for ns in spaces}
    ctx.log(f"writers on {spaces}: put each key twice (values -0, -1), then delete "
            f"{ {ns[-1]: sorted(d) for ns, d in deleted.items()} }; a searcher per namespace "
            f"searches it after every yield while they write")
    wrong: list[str] = []
    errors: list[str] = []
    barrier = Barrier(2 * len(spaces))
    done = anyio.Event()

    def judge_search(ns: tuple[str, ...], found: Any) -> None:
        if not isinstance(found, list):  # a search that gives no list shows nothing put
            wrong.append(f"search {ns} returned {found!r:.80}, not a list of items")
            return
        for item in found:
            if tuple(item.namespace) != ns:
                wrong.append(f"search {ns} gave an item of {tuple(item.namespace)}")
            elif item.value not in [v for k, v in plans[ns] if k == item.key]:
                wrong.append(f"search {ns} gave {item.key}={item.value!r}, never put")

    async def writer(ns: tuple[str, ...]) -> None:
        await barrier.wait()
        try:
            for key, value in plans[ns]:
                await timed_call(store, OP_TIMEOUT_S, "put", ns, key, value)
                await anyio.sleep(0)
            for key in sorted(deleted[ns]):
                await timed_call(store, OP_TIMEOUT_S, "delete", ns, key)
                await anyio.sleep(0)
        except Exception as exc:  # noqa: BLE001 - evidence
            errors.append(f"writer {ns}: {describe(exc)}")

    async def searcher(ns: tuple[str, ...]) -> None:
        await barrier.wait()
        try:
            while not done.is_set():
                judge_search(ns, await timed_call(store, OP_TIMEOUT_S, "search", ns,
                                                   limit=LIMIT))
                await anyio.sleep(0)
        except Exception as exc:  # noqa: BLE001 - evidence
            errors.append(f"searcher {ns}: {describe(exc)}")

    async with actors() as group:
        for ns in spaces:
            group.start_soon(searcher, ns, name=f"searcher {ns[-1]}")
        async with actors() as writing:
            for ns in spaces:
                writing.start_soon(writer, ns, name=f"writer {ns[-1]}")
        done.set()
    lost = 0
    for ns in spaces:
        try:
            found = await timed_call(store, OP_TIMEOUT_S, "search", ns, limit=LIMIT)
        except Exception as exc:  # noqa: BLE001 - evidence
            errors.append(f"final search {ns}: {describe(exc)}")
            continue
        judge_search(ns, found)
        have = {item.key: item.value for item in (found if isinstance(found, list) else ())
                if tuple(item.namespace) == ns}
        want = {key: value for key, value in plans[ns] if key not in deleted[ns]}
        for key, value in want.items():
            if have.get(key) != value:
                lost += 1
                wrong.append(f"{ns} {key}: want {value!r}, got {have.get(key)!r}")
        for key in deleted[ns] & set(have):
            wrong.append(f"{ns} {key} was deleted and is still there")
    counts = Counts(lost=lost, foreign=len(wrong) - lost, raised=len(errors))
    bad = bool(wrong or errors)
    mode = ("error" if errors else "foreign" if counts.foreign else "lossy" if lost
            else "isolated")
    return Trial(ctx.index, ctx.seed, bad, counts, mode=mode,
                 sample="; ".join([*errors, *wrong][:3]) or None, ops=tuple(ctx.ops))


CHECK = CheckSpec(
    id=CHECK_ID,
    invariant="store puts, searches and deletes racing across namespaces (one name a prefix "
    "of another) keep each namespace's items its own: searches see no other namespace's, "
    "and in the end each holds exactly what was put and not deleted",
    fault="a writer per namespace puts and deletes while a searcher per namespace searches it",
    params=(Param("writers", 3, 2, 16, "namespaces, one writer and one searcher each"),
            Param("items", 8, 1, 500, "keys per namespace"), trials_param(3)),
    run_trial=run_trial,
    mutants=("lg_store_reference_search_by_string_prefix", "lg_store_reference_delete_is_a_no_op",
             "lg_store_memory_search_by_string_prefix", "lg_store_sqlite_delete_is_a_no_op"),
    generated=(Selector("lg-store-reference", "ReferenceStore._put", "flip_comparison"),
               Selector("lg-store-memory", "InMemoryStore._apply_put_ops", "flip_comparison")),
    reference="lg-store-reference",
    concurrent=True,
    # a random walk: the searchers never block, so PCT's priorities would starve the writers
    schedule=SchedulePlan("random", timers="virtual"),
)
