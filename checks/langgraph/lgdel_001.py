"""ARIB-LGDEL-001: puts and writes racing delete_thread: nothing deleted comes back, nothing of
a deleted thread is left in the store.

Thread T and thread U each get ``steps`` checkpoints (each with a task's writes), all
acknowledged. Then, released together: a deleter calls ``delete_thread(T)`` after a seeded
number of yields, while a writer goes on putting ``steps`` more checkpoints and writes on T and
another on U. When all returned, T is written again from its start with the same checkpoint
ids (a replayed thread: other values, other task ids). Every op's start and end are stamped
on one counter; then a fresh instance (where one can open the store) lists T and U:

- an op on T that returned before ``delete_thread`` was called is gone: neither its values nor
  its writes are read back, not even under a checkpoint id that was put again (deleted);
- an op on T that began after ``delete_thread`` returned is there (acknowledged);
- an op on T that overlapped the delete may be there or not, but not half of it;
- every op on U is there, and nothing is read back that no op put (foreign);
- thread V (its checkpoints with writes and a list channel, put before the race) is deleted by
  the same deleter right after T and never written again: nothing of V is read back, and no
  row of the store still names V, read besides the saver with the database's own means
  (``arib.targets.langgraph.leftovers``: a blob the saver no longer reads is data a user asked to
  delete, and it comes back when the same versions are put again) -- ``left_behind``.

A saver whose delete raises NotImplementedError (the base class's, inherited: a saver that
offers no delete, and says so on every call) is not_applicable, as on CKPT-007 and CKPT-013.

Tasks on async lanes, threads on sync lanes (both halves: even trials tasks, odd threads),
under the trial's seeded scheduler; a sync deleter's delay is counted in interposition points.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Mapping
from typing import Any

import anyio

from arib.checks._bounds import hang_bound
from arib.checks.base import (
    Barrier,
    CheckSpec,
    NotApplicable,
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
from arib.checks.langgraph._contract import delete_or_abstain, reader_of
from arib.checks.langgraph._faults import Op, judge, read_threads, writer_plan
from arib.checks.langgraph._saver import call
from arib.checks.langgraph.lgconc_001 import mode_of
from arib.ground.model import Counts, Trial
from arib.targets.langgraph.lanes import api_of
from arib.targets.langgraph.leftovers import rows_naming

Stamps = dict[str, tuple[int, int]]  # op name -> (start, end) on the trial's counter


async def _race(saver: Any, mode: str, delay: int, threads: tuple[str, str],
                lanes: dict[str, list[Op]], first: int, stamps: Stamps,
                errors: list[str], bound_s: float) -> bool:
    """The deleter (of T, then of V) and one writer per lane of ops, released together;
    stamps every op (the n-th of lane L as f"L{first + n}": the ops before the race are
    numbered from 0; the deletes as "delete" and "delete_V"). Whether the tasks were still
    running after ``bound_s`` (then cancelled: hung); threads are waited for."""
    clock = itertools.count()

    def stamp(name: str, start: int) -> None:
        stamps[name] = (start, next(clock))

    if mode == "tasks":
        barrier = Barrier(len(lanes) + 1)

        async def deleter() -> None:
            await barrier.wait()
            for _ in range(delay):
                await anyio.sleep(0)
            for name, thread in zip(("delete", "delete_V"), threads, strict=True):
                start = next(clock)
                try:
                    await call(saver, "delete_thread", thread)
                except Exception as exc:  # noqa: BLE001 - evidence
                    errors.append(f"delete_thread({thread}) raised {describe(exc)}")
                    return
                stamp(name, start)

        async def writer(name: str) -> None:
            await barrier.wait()
            for n, op in enumerate(lanes[name], start=first):
                start = next(clock)
                try:
                    await op.run(saver)
                except Exception as exc:  # noqa: BLE001 - evidence
                    errors.append(f"{op.label} raised {describe(exc)}")
                    return
                stamp(f"{name}{n}", start)
                await anyio.sleep(0)

        with anyio.move_on_after(bound_s) as scope:
            async with actors() as group:
                group.start_soon(deleter, name="deleter")
                for name in lanes:
                    group.start_soon(writer, name, name=f"writer {name}")
        return scope.cancel_called

    def sync_deleter() -> None:
        for _ in range(delay):
            thread_point()
        for name, thread in zip(("delete", "delete_V"), threads, strict=True):
            start = next(clock)
            saver.delete_thread(thread)
            stamp(name, start)

    def sync_writer(name: str) -> None:
        for n, op in enumerate(lanes[name], start=first):
            thread_point()
            start = next(clock)
            op.run_sync(saver)
            stamp(f"{name}{n}", start)

    outcome = await race_threads([sync_deleter, *(functools.partial(sync_writer, name)
                                                  for name in lanes)])
    errors.extend(describe(exc) for exc in outcome if exc)
    return False


async def run_trial(ctx: TrialContext) -> Trial:
    """One trial: delete_thread(T) races writers on T and U; T is then written again."""
    steps = ctx.params["steps"]
    handle = await ctx.open()
    saver = handle.session
    name = "delete_thread" if api_of(saver) == "sync" else "adelete_thread"
    if not callable(getattr(saver, name, None)):  # releases before it: never offered
        raise NotApplicable(f"{type(saver).__name__} has no {name}() in this release: the "
                            f"contract was never offered")
    mode = mode_of(saver, ctx.index)
    t, u, v = f"t{ctx.seed:x}-T", f"t{ctx.seed:x}-U", f"t{ctx.seed:x}-V"
    life1 = writer_plan(saver, ctx.seed, 0, t, 2 * steps)
    other = writer_plan(saver, ctx.seed, 1, u, 2 * steps)
    life2 = writer_plan(saver, ctx.seed, 0, t, steps, tag=f"{ctx.seed:x}-again")
    gone = writer_plan(saver, ctx.seed, 2, v, steps, listed=True)
    delay = ctx.rng.randint(0, 4 * steps)
    ctx.log(f"put {steps} checkpoints with writes on {t} and on {u}, {steps} on {v} (with a "
            f"list channel); then as {mode}, released together: delete_thread({t}) then "
            f"delete_thread({v}) after {delay} yields, a writer putting {steps} more on {t}, "
            f"another {steps} more on {u}; then {t} again from its first id; then no row of "
            f"the store may still name {v}")
    errors: list[str] = []
    try:
        for op in [*life1[:2 * steps], *other[:2 * steps], *gone]:
            await op.run(saver)
    except Exception as exc:  # noqa: BLE001 - evidence
        return Trial(ctx.index, ctx.seed, True, Counts(raised=1), mode="setup_failed",
                     sample=describe(exc), ops=tuple(ctx.ops))
    # A saver that inherits the base class's delete (NotImplementedError) refuses it loudly:
    # it offers no delete to race, as on the checks that delete without racing. Probed once the
    # store holds data (a saver may make its tables on the first put, as AsyncSqliteSaver does).
    await delete_or_abstain(ctx, saver, f"t{ctx.seed:x}-never", "a thread never written")
    stamps: Stamps = {f"T{n}": (-2, -1) for n in range(2 * steps)}
    stamps.update({f"U{n}": (-2, -1) for n in range(2 * steps)})
    lanes = {"T": life1[2 * steps:], "U": other[2 * steps:]}
    bound = hang_bound(ctx)
    if await _race(saver, mode, delay, (t, v), lanes, 2 * steps, stamps, errors, bound):
        ctx.log(f"the deleter or a writer was still running after {bound:.1f} s: cancelled")
        return Trial(ctx.index, ctx.seed, True, Counts(wrong_result=1), mode=f"{mode}:hung",
                     sample=f"delete_thread or a writer's call did not return within "
                            f"{bound:.1f} s", ops=tuple(ctx.ops))
    life1 = life1[:2 * steps] + lanes["T"]
    for op in life2:
        try:
            await op.run(saver)
        except Exception as exc:  # noqa: BLE001 - evidence
            errors.append(f"after the delete: {op.label} raised {describe(exc)}")
    try:  # a second instance that cannot open the store shows nothing
        seen = await read_threads(await reader_of(ctx, handle), [t, u, v])
    except Exception as exc:  # noqa: BLE001 - a read that raises shows nothing
        return Trial(ctx.index, ctx.seed, True, Counts(raised=1), mode="read_raised",
                     sample=describe(exc), ops=tuple(ctx.ops))
    left = await _left_behind(ctx, handle, v) if "delete_V" in stamps else {}
    return _judge(ctx, life1, life2, other, stamps, seen, errors, mode, left)


async def _left_behind(ctx: TrialContext, handle: Any, thread: str) -> Mapping[str, int]:
    """Rows of the store that still name ``thread`` after its delete returned, read besides
    the saver (``arib.targets.langgraph.leftovers``); nothing to read where the store is private
    to the instance (its reads judge it)."""
    if handle.private_store:
        return {}
    try:
        found = await anyio.to_thread.run_sync(rows_naming, ctx.target, ctx.build, thread)
    except NotApplicable as exc:
        ctx.log(f"the store cannot be read besides the saver: {exc}")
        return {}
    ctx.log(f"rows of the store naming {thread}: "
            f"{', '.join(f'{k}={n}' for k, n in found.items()) or 'none'}")
    return found


def _judge(ctx: TrialContext, life1: list[Op], life2: list[Op], other: list[Op],
           stamps: Stamps, seen: Any, errors: list[str], mode: str,
           left: Mapping[str, int]) -> Trial:
    d_start, d_end = stamps.get("delete", (0, 0))
    ran = {n: stamps[f"T{n}"] for n in range(len(life1)) if f"T{n}" in stamps}
    gone = [life1[n] for n, (_, end) in ran.items() if end < d_start]
    after = {n for n, (start, _) in ran.items() if start > d_end}
    # What must be there: life-1 ops begun after the delete returned (writes only where their
    # checkpoint is there: writes to a deleted checkpoint cannot be listed), T's second life,
    # every acknowledged op on U. Deleted ops are judged apart, as "came back".
    t_seen = seen.get(life1[0].thread, {})
    plan: list[Op] = []
    required: set[int] = set()
    for n, op in enumerate(life1):
        if op in gone:
            continue
        if n in after and (op.kind == "put" or op.checkpoint_id in t_seen):
            required.add(len(plan))
        plan.append(op)
    required.update(range(len(plan), len(plan) + len(life2)))
    plan.extend(life2)
    required.update(len(plan) + n for n in range(len(other)) if f"U{n}" in stamps)
    plan.extend(other)
    found = judge(plan, required, _without(seen, gone, life2))
    back = []
    for op in gone:
        got = t_seen.get(op.checkpoint_id)
        if got is None:
            continue
        if op.kind == "put" and got[0] == dict(op.checkpoint["channel_values"]):
            back.append(op.label)
        elif op.kind == "writes" and op.triples() & got[1]:
            back.append(op.label)
    ctx.log(f"delete_thread ran over [{d_start}, {d_end}] of the op counter; {len(gone)} "
            f"ops on T were deleted, {len(ran) - len(gone) - len(after)} overlapped it, "
            f"{len(after)} came after")
    counts = Counts(lost=found.lost, foreign=found.foreign + found.torn + len(back)
                    + sum(left.values()), raised=len(errors))
    result = ("writer_error" if errors else "deleted_came_back" if back else "lossy"
              if found.lost else "foreign" if found.bad else "left_behind" if left
              else "clean")
    notes = [*errors, *(f"deleted {label} came back" for label in back), *found.notes,
             *(f"{n} row(s) of {table} still name the deleted thread"
               for table, n in left.items())]
    return Trial(ctx.index, ctx.seed, result != "clean", counts, mode=f"{mode}:{result}",
                 sample="; ".join(notes[:3]) or None, ops=tuple(ctx.ops))


def _without(seen: Any, gone: list[Op], life2: list[Op]) -> Any:
    """``seen`` with what a deleted op left (judged apart as 'came back') removed, so that the
    common judge counts it once; a deleted put's id put again keeps its new values."""
    again = {op.checkpoint_id for op in life2}
    out = {thread: {cp: (values, set(writes)) for cp, (values, writes) in cps.items()}
           for thread, cps in seen.items()}
    for op in gone:
        got = out.get(op.thread, {}).get(op.checkpoint_id)
        if got is None:
            continue
        if op.kind == "writes":
            got[1].difference_update(op.triples())
        elif op.checkpoint_id not in again:
            del out[op.thread][op.checkpoint_id]
    return out


CHECK = CheckSpec(
    id="ARIB-LGDEL-001",
    invariant="after delete_thread(T) returns, nothing put on T before it was called is read "
    "back, even under a checkpoint id put again, and no row of the store still names a "
    "deleted thread; what was put after it returned, and every other thread, is there",
    fault="delete_thread(T) then delete_thread(V) released together with writers on T and on U "
    "(after seeded yields), then T written again from its first checkpoint id; the store "
    "read besides the saver for rows naming V",
    params=(
        Param("steps", 3, 1, 50, "checkpoints (each with its writes) before and during"),
        trials_param(4),
    ),
    run_trial=run_trial,
    mutants=("lg_reference_delete_keeps_writes", "lg_async_sqlite_delete_keeps_writes",
             "lg_sqlite_delete_keeps_writes", "lg_reference_delete_is_soft"),
    generated=(
        Selector("lg-reference", "ReferenceSaver.adelete_thread", "early_return"),
        Selector("lg-async-sqlite-file", "AsyncSqliteSaver.adelete_thread", "early_return"),
        Selector("lg-async-postgres", "AsyncPostgresSaver.adelete_thread", "drop_await"),
    ),
    timeout_s=60.0,
    concurrent=True,
    schedule=SchedulePlan("random", timers="virtual"),
)
