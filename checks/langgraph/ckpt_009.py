"""ARIB-CKPT-009: a sync read or delete called on the event loop's own thread never blocks it:
it answers at once, or refuses at once (asyncio.InvalidStateError), leaving the store as it was.

An application that calls ``graph.get_state()``, ``get_state_history()`` or a saver's
``get_tuple``/``list``/``delete_thread`` from async code (on the loop's thread) reaches the
sync half of its saver there. A saver that serves that half by scheduling its async half on
the same loop and waiting for the result would wait forever: the loop cannot run what it
waits for, and the whole server freezes. The async savers guard these calls and raise
InvalidStateError instead ("only allowed from a different thread"); a saver whose sync half is
its own (SqliteSaver, InMemorySaver, our reference) answers.

On the loop's thread, under a deadline of ``LOOP_DEADLINE_S``: ``get_tuple`` of the latest and
of an earlier checkpoint, ``list`` of the thread, ``get_delta_channel_history`` and ``prune``
where the release has them, and ``delete_thread`` of a second thread. Each must answer what
the served half answers (a delete: the thread is gone) or refuse with InvalidStateError (or
NotImplementedError, a method the class does not offer), the store unchanged. Past the deadline
the call is judged ``hung``. ``put`` and ``put_writes`` are not called there: the async savers
do not guard them (they are the graph runtime's calls, made through the async half in an
async run), and such a call blocks the loop in every release.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from typing import Any

from arib.checks.base import CheckSpec, Param, Selector, TrialContext, describe
from arib.checks.common import trials_param
from arib.checks.langgraph._contract import Problems, guarded, ids_of, put_chain, thread_config
from arib.checks.langgraph._halves import listing_view, offers, sync_on_loop, tuple_view
from arib.checks.langgraph._saver import call, config, listing, saver_of
from arib.ground.interrupts import Overdue, alarm_after
from arib.ground.model import Trial
from arib.targets.langgraph.lanes import latest_only

# How long a sync call on the loop's thread may take to answer or refuse.
LOOP_DEADLINE_S = 1.0
# The refusals that leave the caller told: the async savers' guard, a method not offered.
REFUSALS = (asyncio.InvalidStateError, NotImplementedError)


async def run_trial(ctx: TrialContext) -> Trial:
    return await guarded(ctx, lambda: _trial(ctx))


def _on_loop(ctx: TrialContext, problems: Problems, what: str,
             body: Callable[[], Any]) -> tuple[str, Any]:
    """("answered", value), ("refused", exception) or ("hung"/"raised", None) of ``body()``
    called on the loop's thread under the deadline; a hang or another exception is a
    problem."""
    ctx.log(f"{what} on the event loop's thread (deadline {LOOP_DEADLINE_S:g} s)")
    try:
        with alarm_after(LOOP_DEADLINE_S):
            return "answered", body()
    except Overdue:
        problems.add("hung", f"{what} on the event loop's thread neither answered nor "
                             f"refused in {LOOP_DEADLINE_S:g} s: it blocks the loop")
        return "hung", None
    except REFUSALS as exc:
        ctx.log(f"{what} refused: {describe(exc)}")
        return "refused", exc
    except Exception as exc:  # noqa: BLE001 - what the saver raised is evidence
        problems.add("raised", f"{what} on the event loop's thread raised {describe(exc)}, "
                               f"neither an answer nor the loop guard's refusal")
        return "raised", None


async def _trial(ctx: TrialContext) -> Trial:
    saver = saver_of(await ctx.open())
    history = not latest_only(saver)
    thread, victim, pruned = (f"{p}-{ctx.seed:x}" for p in ("t", "u", "p"))
    chain = await put_chain(ctx, saver, thread, "", ctx.params["steps"] if history else 1,
                            history=history)
    for other in (victim, pruned):
        await put_chain(ctx, saver, other, "", 1, writer=1, history=history)
    ctx.log(f"put_writes task-w on {chain[-1].id}")
    await call(saver, "put_writes", config(thread, "", chain[-1].id), [("v", "w")], "task-w")
    problems = Problems()
    reads: list[tuple[str, str, tuple[Any, ...], dict[str, Any]]] = [
        ("get_tuple of the latest", "get_tuple", (config(thread),), {}),
        ("list of the thread", "list", (config(thread, ""),), {}),
    ]
    if history:
        reads.append((f"get_tuple of {chain[0].id}", "get_tuple",
                      (config(thread, "", chain[0].id),), {}))
    if offers(saver, "get_delta_channel_history"):
        reads.append(("get_delta_channel_history", "get_delta_channel_history", (),
                      {"config": config(thread, "", chain[-1].id), "channels": ["v"]}))
    for what, method, args, kwargs in reads:
        outcome, got = _on_loop(ctx, problems, what,
                                functools.partial(sync_on_loop, saver, method, *args, **kwargs))
        if outcome != "answered":
            continue
        if method == "get_delta_channel_history":
            served = await call(saver, method, *args, **kwargs)
            problems.expect(f"{what} answered on the loop's thread", served, got)
            continue
        view = listing_view if method == "list" else tuple_view
        served = await (listing(saver, *args) if method == "list"
                        else call(saver, method, *args))
        problems.expect(f"{what} answered on the loop's thread, as the served half gives it",
                        view(served), view(got))
    mutations: list[tuple[str, str, tuple[Any, ...], dict[str, Any], str]] = []
    if offers(saver, "delete_thread"):
        mutations.append((f"delete_thread {victim!r}", "delete_thread", (victim,), {}, victim))
    if offers(saver, "prune"):
        mutations.append((f"prune [{pruned!r}] strategy delete", "prune", ([pruned],),
                          {"strategy": "delete"}, pruned))
    for what, method, args, kwargs, gone in mutations:
        outcome, _ = _on_loop(ctx, problems, what,
                              functools.partial(sync_on_loop, saver, method, *args, **kwargs))
        left = ids_of(await listing(saver, thread_config(gone)))
        if outcome == "answered" and left:
            problems.add("foreign", f"{what} answered on the loop's thread, but {gone!r} still "
                                    f"has {left}")
        elif outcome == "refused" and not left:
            problems.add("lost", f"{what} was refused on the loop's thread, yet {gone!r} is "
                                 f"gone")
    ctx.log(f"list {thread!r} through the served half: untouched")
    problems.expect(f"latest of {thread!r} after the calls on the loop's thread", [chain[-1].id],
                    ids_of(await listing(saver, config(thread, ""), limit=1)), kind="lost")
    return problems.trial(ctx, "never_blocks")


CHECK = CheckSpec(
    id="ARIB-CKPT-009",
    invariant="a sync read or delete called on the event loop's thread answers or refuses at "
              "once (InvalidStateError), never blocking the loop, and a refusal changes nothing",
    fault="get_tuple, list, get_delta_channel_history, delete_thread and prune called "
          "synchronously on the event loop's own thread, each under a 1 s deadline",
    params=(Param("steps", 2, 2, 30, "checkpoints of the thread read"), trials_param(1)),
    run_trial=run_trial,
    mutants=("lg_api_reference_sync_read_waits_on_loop",
             "lg_api_async_sqlite_get_tuple_unguarded"),
    generated=(
        Selector("lg-async-sqlite-file", "AsyncSqliteSaver.get_tuple", "flip_comparison"),
        Selector("lg-async-sqlite-file", "AsyncSqliteSaver.list", "flip_comparison"),
        Selector("lg-async-sqlite-file", "AsyncSqliteSaver.delete_thread", "flip_comparison"),
    ),
    timeout_s=30.0,
    hang_invariant=True,
)
