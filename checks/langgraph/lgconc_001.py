"""ARIB-LGCONC-001: concurrent puts and put_writes are all read back, none foreign.

``writers`` writers share one saver; writer w works on thread ``w % threads`` (so with
``threads`` = 1 every writer races on one thread id), putting ``steps`` checkpoints, each a
child of its previous one, and after each a task's writes to it. The writers are released
together: as tasks calling ``aput``/``aput_writes`` (a lane whose class serves the async half;
every op is followed by one yield to the loop), or as threads calling ``put``/``put_writes``
(a sync lane; each op an interposition point, as are the saver's sqlite3 calls and its lock),
all under the trial's seeded scheduler. A lane that serves both halves alternates by
trial: even trials tasks, odd trials threads. Then every thread is listed (through a fresh
instance where one can open the store): every acknowledged checkpoint with its values and
every acknowledged write on its checkpoint, nothing in a thread or on a checkpoint it was not
put in or on.
"""

from __future__ import annotations

import functools
from typing import Any

import anyio

from arib.checks._bounds import hang_bound
from arib.checks.base import (
    Barrier,
    CheckSpec,
    Param,
    SchedulePlan,
    Selector,
    TrialContext,
    actors,
    describe,
    race_threads,
    thread_point,
)
from arib.checks.common import trials_param
from arib.checks.langgraph._contract import reader_of
from arib.checks.langgraph._faults import Op, judge, read_threads, writer_plan
from arib.ground.model import Counts, Trial
from arib.targets.langgraph.lanes import api_of, is_async


def mode_of(saver: Any, index: int) -> str:
    """``tasks`` or ``threads``: the half of the interface the lane serves (both: by trial)."""
    api = api_of(saver)
    if api == "both":
        return "tasks" if index % 2 == 0 else "threads"
    return "tasks" if is_async(api) else "threads"


async def run_writers(saver: Any, plans: dict[int, list[Op]], order: list[int], mode: str,
                      acked: dict[int, set[int]], errors: list[str],
                      bound_s: float | None = None) -> bool:
    """Every writer's plan, released together as tasks or threads; ``acked[w]`` gets the
    indexes of the ops that returned, ``errors`` what raised (each writer stops there).
    Whether the tasks were still running after ``bound_s`` (then cancelled: hung); threads
    cannot be given up on, and are waited for."""
    if mode == "tasks":
        barrier = Barrier(len(order))

        async def writer(w: int) -> None:
            await barrier.wait()
            for n, op in enumerate(plans[w]):
                try:
                    await op.run(saver)
                except Exception as exc:  # noqa: BLE001 - a writer error is evidence
                    errors.append(f"writer {w} {op.label}: {describe(exc)}")
                    return
                acked[w].add(n)
                await anyio.sleep(0)

        with anyio.move_on_after(bound_s if bound_s is not None else float("inf")) as scope:
            async with actors() as group:
                for w in order:
                    group.start_soon(writer, w, name=f"writer {w}")
        return scope.cancel_called

    def thread_writer(w: int) -> None:
        for n, op in enumerate(plans[w]):
            thread_point()
            op.run_sync(saver)
            acked[w].add(n)

    outcome = await race_threads([functools.partial(thread_writer, w) for w in order])
    errors.extend(f"writer {w}: {describe(exc)}"
                  for w, exc in zip(order, outcome, strict=True) if exc)
    return False


async def run_trial(ctx: TrialContext) -> Trial:
    """One trial: writers race puts and writes on shared thread ids, then all is read back."""
    writers, steps, threads = ctx.params["writers"], ctx.params["steps"], ctx.params["threads"]
    handle = await ctx.open()
    saver = handle.session
    mode = mode_of(saver, ctx.index)
    thread_ids = [f"t{ctx.seed:x}-{k}" for k in range(threads)]
    plans = {w: writer_plan(saver, ctx.seed, w, thread_ids[w % threads], steps)
             for w in range(writers)}
    order = list(plans)
    ctx.rng.shuffle(order)
    ctx.log(f"{writers} writers as {mode} on threads {thread_ids} (writer w on thread "
            f"w % {threads}), released together in order {order}; each does {steps} x "
            f"(put a checkpoint, child of its previous; put_writes of 2 writes to it)")
    acked: dict[int, set[int]] = {w: set() for w in plans}
    errors: list[str] = []
    bound = hang_bound(ctx)
    if await run_writers(saver, plans, order, mode, acked, errors, bound):
        ctx.log(f"the writers were still running after {bound:.1f} s: cancelled")
        return Trial(ctx.index, ctx.seed, True, Counts(wrong_result=1), mode=f"{mode}:hung",
                     sample=f"a writer's call did not return within {bound:.1f} s; "
                            f"{sum(map(len, acked.values()))} ops had returned",
                     ops=tuple(ctx.ops))
    try:  # a second instance that cannot open the store shows nothing written
        seen = await read_threads(await reader_of(ctx, handle), thread_ids)
    except Exception as exc:  # noqa: BLE001 - a read that raises shows nothing written
        return Trial(ctx.index, ctx.seed, True, Counts(lost=writers * steps, raised=1),
                     mode="read_raised", sample=describe(exc), ops=tuple(ctx.ops))
    plan = [op for w in order for op in plans[w]]
    offsets, at = {}, 0
    for w in order:
        offsets[w], at = at, at + len(plans[w])
    found = judge(plan, {offsets[w] + n for w in order for n in acked[w]}, seen)
    counts = Counts(lost=found.lost, foreign=found.foreign + found.torn, raised=len(errors))
    bad = found.bad or bool(errors)
    result = ("writer_error" if errors else "lossy" if found.lost else "foreign"
              if found.bad else "exact")
    return Trial(ctx.index, ctx.seed, bad, counts, mode=f"{mode}:{result}",
                 sample="; ".join([*errors, *found.notes][:3]) or None, ops=tuple(ctx.ops))


CHECK = CheckSpec(
    id="ARIB-LGCONC-001",
    invariant="checkpoints and writes put concurrently by tasks or threads, on one thread id "
    "or several, are all read back with their values, and none is foreign",
    fault="writers released together, each putting steps checkpoints and a task's writes to "
    "each, writer w on thread w % threads; tasks on async lanes, threads on sync lanes",
    params=(
        Param("writers", 4, 2, 32, "concurrent writers"),
        Param("steps", 4, 1, 100, "checkpoints (each with its writes) per writer"),
        Param("threads", 2, 1, 16, "thread ids the writers share (1: all on one)"),
        trials_param(4),
    ),
    run_trial=run_trial,
    mutants=(
        "lg_reference_writes_follow_last_put",
        "lg_async_sqlite_writes_to_latest",
        "lg_sqlite_writes_to_latest",
    ),
    generated=(
        Selector("lg-reference", "ReferenceSaver.aput_writes", "early_return"),
        Selector("lg-async-sqlite-file", "AsyncSqliteSaver.aput", "early_return"),
        Selector("lg-async-sqlite-file", "AsyncSqliteSaver.aput_writes", "early_return"),
    ),
    timeout_s=60.0,
    concurrent=True,
    schedule=SchedulePlan("random", {"g": 50}, timers="virtual"),
)
