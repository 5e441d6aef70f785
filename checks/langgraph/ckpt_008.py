"""ARIB-CKPT-008: both halves of a saver's interface keep one store, or the half it does not
serve refuses loudly.

Applications reach a checkpointer through either half: LangGraph's sync API (``graph.invoke``,
``get_state``, ``get_state_history``) calls ``get_tuple``/``list``/``put`` from a worker thread,
the async API calls ``aget_tuple``/``alist``/``aput``; an async saver serves its sync half by
running the async one on its event loop, and a saver that serves one half only must refuse the
other rather than answer it silently (an ``aput`` that returns without storing loses a
checkpoint that the run believes saved).

On a saver that serves both halves, or serves the sync half through its async one, a chain is
put through alternating halves (each checkpoint's parent put through the other half), pending
writes through both, and every read is made through both halves, which must give the same
tuples, and the tuples put: ``get_tuple`` by id and latest, ``list`` with ``limit``, ``before``
and a metadata ``filter``, ``get_delta_channel_history`` where the release has it, then a
``delete_thread`` through the sync half, seen by both. On a saver that serves the sync half
only, each async method (``aget_tuple``, ``alist``, ``aput``, ``aput_writes``,
``adelete_thread``, where the release has it) must raise, and the store must be as it was; on
one that serves the async half only (``async-only``: AsyncRedisSaver of
langgraph-checkpoint-plainredis, AsyncLMDBSaver of -lmdb, documented so), the mirror: each sync
method, called from a worker thread as a sync graph run calls it, must raise, and the store,
read through the async half, must be as it was. A
saver that is a context manager (``InMemorySaver``) must bind itself in ``with`` and
``async with``, working inside: ``async with InMemorySaver() as saver`` that binds None
compiles a graph with no checkpointer.

A half that never answers fails too (``hang_invariant``): LangGraph's sync API waits on the
saver from a worker thread, and a read that leaves the saver's lock held (an async listing
abandoned half-way by the sync half that drove it) wedges every later call of either half
until the garbage collector happens to finalize it: the graph run is stuck, silently.
"""

from __future__ import annotations

from typing import Any

from arib.checks.base import CheckSpec, Param, Selector, TrialContext, describe
from arib.checks.common import trials_param
from arib.checks.langgraph._contract import Problems, Put, guarded, ids_of, named, thread_config
from arib.checks.langgraph._halves import (
    async_half,
    listing_view,
    offers,
    sync_half,
    tuple_view,
)
from arib.checks.langgraph._saver import call, config, listing, make_checkpoint, saver_of
from arib.ground.model import Trial
from arib.targets.langgraph.lanes import api_of, is_async, latest_only, serves_sync

HALVES = {"sync": sync_half, "async": async_half}


async def run_trial(ctx: TrialContext) -> Trial:
    return await guarded(ctx, lambda: _trial(ctx))


async def _put(ctx: TrialContext, saver: Any, half: str, thread: str, ns: str, step: int,
               previous: Put | None, history: bool) -> Put:
    """One checkpoint put through ``half``; its returned config must name it."""
    prior = previous.checkpoint if previous is not None else None
    cp, versions = make_checkpoint(saver, ctx.seed, step, {"v": f"{thread}/{ns}/{step}"}, prior,
                                   history=history)
    meta = {"half": half, "step": step}
    parent = previous.id if previous is not None else None
    ctx.log(f"put ({half} half) thread {thread!r} ns {ns!r} id {cp['id']} parent {parent}")
    returned = await HALVES[half](saver, "put", config(thread, ns, parent), cp, meta, versions)
    if named(returned) != (thread, ns, cp["id"]):
        raise RuntimeError(f"put ({half} half) of {cp['id']} returned {returned!r:.160}")
    return Put(thread, ns, cp["id"], parent, cp, meta)


async def _both(ctx: TrialContext, saver: Any, problems: Problems, what: str, method: str,
                *args: Any, **kwargs: Any) -> Any:
    """``method`` through both halves; a problem unless they agree; the async half's answer."""
    ctx.log(f"{what}: {method} through the sync half (worker thread) and the async half")
    got_sync = await sync_half(saver, method, *args, **kwargs)
    got_async = await async_half(saver, method, *args, **kwargs)
    view = listing_view if method == "list" else (
        tuple_view if method == "get_tuple" else (lambda x: x))
    problems.expect(f"{what}: sync half as the async half gives it", view(got_async),
                    view(got_sync))
    return got_async


async def _halves_agree(ctx: TrialContext, saver: Any, problems: Problems) -> None:
    history = not latest_only(saver)
    steps = ctx.params["steps"] if history else 1
    thread, other = f"t-{ctx.seed:x}", f"u-{ctx.seed:x}"
    chain: list[Put] = []
    for step in range(steps):
        chain.append(await _put(ctx, saver, ("sync", "async")[step % 2], thread, "", step,
                                chain[-1] if chain else None, history))
    inner = await _put(ctx, saver, "async", thread, "inner", 0, None, history)
    victim = await _put(ctx, saver, "sync", other, "", 0, None, history)
    written: dict[tuple[str, str], list[tuple[str, str, Any]]] = {}
    for put in chain if history else chain[-1:]:
        for half in ("sync", "async"):
            task = f"task-{half}"
            writes = [("v", f"{half}|{put.id}"), ("w", [half, put.id])]
            ctx.log(f"put_writes ({half} half) {task} on {put.id}")
            await HALVES[half](saver, "put_writes", config(thread, "", put.id), writes, task)
            written.setdefault((put.ns, put.id), []).extend((task, ch, v) for ch, v in writes)
    for put in (chain if history else chain[-1:]) + [inner]:
        got = await _both(ctx, saver, problems, f"get_tuple {put.ns!r} {put.id}", "get_tuple",
                          config(thread, put.ns, put.id))
        if got is None:
            problems.add("lost", f"{put.id} put through the {put.metadata['half']} half is not "
                                 f"found")
            continue
        problems.expect(f"values of {put.id}", put.checkpoint["channel_values"],
                        got.checkpoint["channel_values"])
        problems.expect(f"writes of {put.id} (task, channel, value), sorted",
                        sorted(written.get((put.ns, put.id), []), key=repr),
                        sorted(got.pending_writes or [], key=repr))
    latest = await _both(ctx, saver, problems, "get_tuple of the thread (latest)", "get_tuple",
                         config(thread))
    problems.expect("latest of the thread", chain[-1].id,
                    None if latest is None else latest.checkpoint["id"])
    newest = [p.id for p in reversed(chain)]
    cases: list[tuple[str, dict[str, Any], dict[str, Any], list[str] | None]] = [
        ("all", config(thread, ""), {}, newest),
        ("limit=1", config(thread, ""), {"limit": 1}, newest[:1]),
        ("filter half=async", config(thread, ""), {"filter": {"half": "async"}},
         [p.id for p in reversed(chain) if p.metadata["half"] == "async"]),
        ("every namespace", thread_config(thread), {}, None),
    ]
    if history:
        cases.append((f"before {newest[0]}", config(thread, ""),
                      {"before": config(thread, "", newest[0])}, newest[1:]))
    for label, cfg, kwargs, want in cases:
        got_list = await _both(ctx, saver, problems, f"list {label}", "list", cfg, **kwargs)
        if want is not None:
            problems.expect(f"list {label} (ids, newest first)", want, ids_of(got_list))
    if offers(saver, "get_delta_channel_history") and offers(saver,
                                                               "aget_delta_channel_history"):
        await _both(ctx, saver, problems, f"get_delta_channel_history of {chain[-1].id}",
                    "get_delta_channel_history", config=config(thread, "", chain[-1].id),
                    channels=["v", "w"])
    if not offers(saver, "delete_thread"):
        return
    ctx.log(f"delete_thread {other!r} through the sync half (worker thread)")
    try:
        await sync_half(saver, "delete_thread", other)
    except NotImplementedError as exc:
        ctx.log(f"delete_thread is not implemented here ({describe(exc)}): not judged")
        return
    for half in ("sync", "async"):
        left = await HALVES[half](saver, "list", thread_config(other))
        problems.expect(f"list of {other!r} deleted through the sync half, read through the "
                        f"{half} half", [], ids_of(left), kind="foreign")
    problems.expect(f"latest of {thread!r} after {other!r} (holding {victim.id}) was deleted",
                    [chain[-1].id],
                    ids_of(await async_half(saver, "list", config(thread, ""), limit=1)),
                    kind="lost")


async def _unserved_refuses(ctx: TrialContext, saver: Any, problems: Problems,
                            served: str = "sync") -> None:
    """The half ``saver`` does not serve refuses every call and changes nothing: a chain put
    through ``served``, then every method of the other half called, then the store read
    through ``served`` (``listing``) as it was."""
    unserved = "async" if served == "sync" else "sync"
    history = not latest_only(saver)
    thread = f"t-{ctx.seed:x}"
    chain: list[Put] = []
    for step in range(ctx.params["steps"] if history else 1):
        chain.append(await _put(ctx, saver, served, thread, "", step,
                                chain[-1] if chain else None, history))
    await HALVES[served](saver, "put_writes", config(thread, "", chain[-1].id), [("v", "kept")],
                         f"task-{served}")
    before = listing_view(await listing(saver, thread_config(thread)))
    extra, versions = make_checkpoint(saver, ctx.seed, len(chain), {"v": "unserved"},
                                      chain[-1].checkpoint, history=history)
    attempts: list[tuple[str, tuple[Any, ...]]] = [
        ("get_tuple", (config(thread, "", chain[-1].id),)),
        ("list", (thread_config(thread),)),
        ("put", (config(thread, "", chain[-1].id), extra, {"half": unserved}, versions)),
        ("put_writes", (config(thread, "", chain[-1].id), [("v", "unserved")],
                        f"task-{unserved}")),
        ("delete_thread", (thread,)),
    ]
    cls = type(saver).__name__
    where = " from a worker thread" if unserved == "sync" else ""
    for method, args in attempts:
        name = method if unserved == "sync" else f"a{method}"
        if not offers(saver, name):
            ctx.log(f"{cls} has no {name}() in this release")
            continue
        ctx.log(f"{name}{where} on {cls}, which serves the {served} half only")
        try:
            answer = await HALVES[unserved](saver, method, *args)
        except Exception as exc:  # noqa: BLE001 - a refusal is what is expected
            ctx.log(f"{name} refused: {describe(exc)}")
            continue
        problems.add("wrong", f"{name}{where} on {cls} (it serves only the {served} half) "
                              f"answered {answer!r:.80} instead of refusing")
    ctx.log(f"list the thread through the {served} half: unchanged by the refused calls")
    problems.expect(f"the store after the {unserved} half's calls (refused or not)", before,
                    listing_view(await listing(saver, thread_config(thread))), kind="foreign")


async def _context_manager(ctx: TrialContext, saver: Any, problems: Problems) -> None:
    cls = type(saver)
    thread = f"cm-{ctx.seed:x}"
    history = not latest_only(saver)
    for kind, enter in (("with", "__enter__"), ("async with", "__aenter__")):
        if getattr(cls, enter, None) is None:
            continue
        ctx.log(f"{kind} {cls.__name__}() as bound: put, then read through the saver")
        if kind == "with":
            with saver as bound:
                ok = bound is saver
        else:
            async with saver as bound:
                ok = bound is saver
        if not ok:
            problems.add("wrong", f"`{kind} saver as bound` bound {bound!r:.60}, not the saver "
                                  f"(a graph compiled with it has no checkpointer)")
            continue
        # the half the lane serves; on a saver serving both, the half the block's kind uses
        api = api_of(saver)
        half = "async" if is_async(api) else {"sync": "sync"}.get(api, kind.split()[0])
        put = await _put(ctx, saver, "sync" if half == "with" else half, thread,
                         kind.replace(" ", "-"), 0, None, history)
        got = await call(saver, "get_tuple", config(thread, put.ns, put.id))
        problems.expect(f"checkpoint put after `{kind}`", put.id,
                        None if got is None else got.checkpoint["id"], kind="lost")


async def _trial(ctx: TrialContext) -> Trial:
    saver = saver_of(await ctx.open())
    problems = Problems()
    if api_of(saver) == "sync":
        await _unserved_refuses(ctx, saver, problems)
    elif not serves_sync(api_of(saver)):  # async-only: the mirror
        await _unserved_refuses(ctx, saver, problems, served="async")
    else:
        await _halves_agree(ctx, saver, problems)
    await _context_manager(ctx, saver, problems)
    return problems.trial(ctx, "one_store")


CHECK = CheckSpec(
    id="ARIB-CKPT-008",
    invariant="both halves of a saver's interface keep one store (the same tuples through "
              "get_tuple, list, put, put_writes and delete_thread), or the half it does not "
              "serve refuses loudly, and neither half hangs; a saver that is a context "
              "manager binds itself",
    fault="a chain put through alternating halves, every read through both; on a sync-only "
          "saver, every async method called (on an async-only one, every sync method); "
          "`with` and `async with` on a context manager",
    params=(Param("steps", 3, 2, 30, "checkpoints of the chain put through both halves"),
            trials_param(1)),
    run_trial=run_trial,
    mutants=("lg_api_reference_alist_drops_limit", "lg_api_async_sqlite_list_drops_filter",
             "lg_api_sqlite_aput_pretends"),
    generated=(
        Selector("lg-async-sqlite-file", "AsyncSqliteSaver.list", "single_attempt_loop"),
        Selector("lg-sqlite-file", "SqliteSaver.aput", "early_return"),
        Selector("lg-sqlite-file", "SqliteSaver.alist", "early_return"),
        Selector("lg-memory", "InMemorySaver.__aenter__", "early_return"),
    ),
    timeout_s=30.0,
    hang_invariant=True,
)
