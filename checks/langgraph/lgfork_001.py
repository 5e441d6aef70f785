"""ARIB-LGFORK-001: time travel while the thread is written: a fork from an earlier checkpoint,
with an interrupt and its resumes on it, put while another run goes on writing the thread,
leaves both lines whole.

Time travel in LangGraph is a fork: ``update_state`` with the config of an earlier checkpoint
puts a new checkpoint whose parent is that one, and the run resumed from it writes its own
line; a node that called ``interrupt()`` left an ``__interrupt__`` write on its checkpoint, and
``Command(resume=...)`` puts its ``__resume__`` write there, again for each further interrupt of
the node (the slot keeps the latest). Meanwhile another run (a background run, a second tab)
goes on writing the thread's main line.

Thread T gets ``steps`` checkpoints with a task's writes each (M0 .. M(s-1)), all acknowledged.
Then, released together (tasks on an async class, threads on a sync one; a class serving both:
even trials tasks, odd threads): the main run puts ``steps`` more checkpoints with writes, each
a child of the one before; the forker puts F0 (its parent M1, M1's values updated), an
interrupt write of a task on F0, that task's resume write, its second resume write (the slot
overwritten) and, resumed, its output writes, then F1 (a child of F0) with a task's writes.
Then, through a fresh instance where one can open the store:

- every checkpoint of both lines is listed with the values it was put with, and with the parent
  it was put under (F0's is M1, not the main line's latest);
- every write is on the checkpoint it was put on; F0 shows the interrupt and the latest resume
  of the task's slot, never the earlier one;
- ``get_tuple`` of the thread gives the newest checkpoint of both lines, and of F0's config gives
  F0 with its writes.

A saver that keeps only a thread's latest checkpoint abstains (no fork can be read back).
"""

from __future__ import annotations

import functools
from typing import Any

import anyio

from arib.checks.base import (
    Barrier,
    CheckSpec,
    Param,
    Selector,
    TrialContext,
    describe,
    race_threads,
)
from arib.checks.common import trials_param
from arib.checks.langgraph._contract import named, reader_of
from arib.checks.langgraph._faults import Op, judge, writer_plan
from arib.checks.langgraph._saver import call, config, listing, make_checkpoint, special_indexes
from arib.checks.langgraph.lgconc_001 import mode_of
from arib.ground.model import Counts, Trial
from arib.targets.base import NotApplicable

CHECK_ID = "ARIB-LGFORK-001"
FORK_WRITER = 7  # the forker's checkpoint ids and values name it
TASK = "fork-task"


def _special(index: int) -> str:
    """The special channel whose writes slot is ``index`` (WRITES_IDX_MAP): -3 the interrupt,
    -4 the resume; NotApplicable on a release without it (checkpoint 1.0.1 has no map)."""
    specials = special_indexes()
    for channel, slot in specials.items():
        if slot == index:
            return str(channel)
    raise NotApplicable(f"this release's WRITES_IDX_MAP ({specials!r}) has no "
                        f"special channel at {index}: interrupts and resumes were never "
                        f"offered as such there")


def fork_plan(saver: Any, seed: int, thread: str, base: Op, step: int) -> tuple[list[Op], Op]:
    """The forker's ops: F0 (parent ``base``), the task's interrupt, resume and second resume
    on F0 and, resumed, its output, then F1 (child of F0) with a task's writes; and the resume
    the second overwrites."""
    interrupt, resume = _special(-3), _special(-4)
    f0, versions = make_checkpoint(saver, seed, step, {"value": f"{seed:x}-fork-0", "fork": 0},
                                   base.checkpoint, writer=FORK_WRITER)
    ops = [Op("put", thread, f0["id"], base.checkpoint_id, f0,
              {"source": "update", "step": step, "writer": "fork"}, versions),
           Op("writes", thread, f0["id"], task_id=TASK,
              writes=((interrupt, f"{seed:x}-ask"),))]
    first = Op("writes", thread, f0["id"], task_id=TASK, writes=((resume, f"{seed:x}-answer-1"),))
    ops += [first, Op("writes", thread, f0["id"], task_id=TASK,
                      writes=((resume, f"{seed:x}-answer-2"),)),
            Op("writes", thread, f0["id"], task_id=TASK,  # the resumed node's own output
               writes=(("ch0", f"{seed:x}-resumed-0"), ("ch1", f"{seed:x}-resumed-1")))]
    f1, versions = make_checkpoint(saver, seed, step + 1, {"value": f"{seed:x}-fork-1",
                                                           "fork": 1}, f0, writer=FORK_WRITER)
    ops += [Op("put", thread, f1["id"], f0["id"], f1,
               {"source": "loop", "step": step + 1, "writer": "fork"}, versions),
            Op("writes", thread, f1["id"], task_id=f"task-{seed:x}-fork-1",
               writes=(("ch0", f"{seed:x}-fork-1-0"), ("ch1", f"{seed:x}-fork-1-1")))]
    return ops, first


async def _race(saver: Any, mode: str, lines: dict[str, list[Op]],
                acked: dict[str, set[int]], errors: list[str]) -> None:
    """The main run and the forker, released together, each op after the other."""
    if mode == "tasks":
        barrier = Barrier(len(lines))

        async def line(name: str) -> None:
            await barrier.wait()
            for n, op in enumerate(lines[name]):
                try:
                    await op.run(saver)
                except Exception as exc:  # noqa: BLE001 - evidence
                    errors.append(f"{op.label}: {describe(exc)}")
                    return
                acked[name].add(n)
                await anyio.sleep(0)

        async with anyio.create_task_group() as tg:
            for name in lines:
                tg.start_soon(line, name)
        return

    def sync_line(name: str) -> None:
        for n, op in enumerate(lines[name]):
            op.run_sync(saver)
            acked[name].add(n)

    outcome = await race_threads([functools.partial(sync_line, name) for name in lines])
    errors.extend(describe(exc) for exc in outcome if exc)


async def run_trial(ctx: TrialContext) -> Trial:
    """One trial: a fork with an interrupt and its resumes, put while the main line grows."""
    steps = ctx.params["steps"]
    handle = await ctx.open()
    saver = handle.session
    mode = mode_of(saver, ctx.index)
    thread = f"t{ctx.seed:x}-T"
    main = writer_plan(saver, ctx.seed, 0, thread, 2 * steps)
    fork, overwritten = fork_plan(saver, ctx.seed, thread, main[2], 2 * steps)
    ctx.log(f"put {steps} checkpoints with writes on {thread}; then as {mode}, released "
            f"together: the main run puts {steps} more with writes; the forker puts F0 (parent "
            f"{main[2].checkpoint_id}), an interrupt, a resume and a second resume of {TASK} on "
            f"it, then F1 (child of F0) with writes; then a fresh instance lists and gets")
    errors: list[str] = []
    try:
        for op in main[:2 * steps]:
            await op.run(saver)
    except Exception as exc:  # noqa: BLE001 - evidence
        return Trial(ctx.index, ctx.seed, True, Counts(raised=1), mode="setup_failed",
                     sample=describe(exc), ops=tuple(ctx.ops))
    lines = {"main": main[2 * steps:], "fork": fork}
    acked: dict[str, set[int]] = {name: set() for name in lines}
    await _race(saver, mode, lines, acked, errors)
    try:
        reader = await reader_of(ctx, handle)
        listed = await listing(reader, config(thread))
        latest = await call(reader, "get_tuple", config(thread))
        forked = await call(reader, "get_tuple", config(thread, "", fork[0].checkpoint_id))
    except Exception as exc:  # noqa: BLE001 - a read that raises shows nothing
        return Trial(ctx.index, ctx.seed, True, Counts(raised=1), mode="read_raised",
                     sample=describe(exc), ops=tuple(ctx.ops))
    return _judge(ctx, mode, main, lines, acked, overwritten, listed, latest, forked, errors)


def _judge(ctx: TrialContext, mode: str, main: list[Op], lines: dict[str, list[Op]],
           acked: dict[str, set[int]], overwritten: Op, listed: list[Any], latest: Any,
           forked: Any, errors: list[str]) -> Trial:
    steps = len(lines["main"]) // 2
    plan = [*main[:2 * steps]]
    done = set(range(len(plan)))
    for name, ops in lines.items():
        kept = [op for op in ops if op is not overwritten]
        done.update(len(plan) + kept.index(op) for n, op in enumerate(ops)
                    if n in acked[name] and op in kept)
        plan.extend(kept)
    thread = plan[0].thread
    seen = {thread: {item.checkpoint["id"]: (dict(item.checkpoint.get("channel_values", {})),
                                             {tuple(w) for w in (item.pending_writes or [])})
                     for item in listed}}
    found = judge(plan, done, seen)  # type: ignore[arg-type]
    notes = [*errors, *found.notes]
    parents = {item.checkpoint["id"]: (named(item.parent_config) or (None, None, None))[2]
               for item in listed}
    wrong_parent = [f"{op.checkpoint_id} is listed under parent {parents[op.checkpoint_id]}, "
                    f"was put under {op.parent}" for op in plan
                    if op.kind == "put" and op.checkpoint_id in parents
                    and parents[op.checkpoint_id] != op.parent]
    notes.extend(wrong_parent)
    stale = [w for w in (forked.pending_writes if forked else []) or []
             if tuple(w) in overwritten.triples()]
    if stale:
        notes.append(f"F0 still shows the resume its second resume overwrote: {stale[0]!r:.80}")
    newest = max(op.checkpoint_id for n, op in enumerate(plan) if op.kind == "put" and n in done)
    got_latest = latest.checkpoint["id"] if latest is not None else None
    if got_latest != newest:
        notes.append(f"get_tuple of the thread gave {got_latest}, the newest is {newest}")
    fork_writes = {tuple(w) for w in (forked.pending_writes or [])} if forked else set()
    listed_fork = seen[thread].get(lines["fork"][0].checkpoint_id, (None, set()))[1]
    if forked is None or fork_writes != listed_fork:
        notes.append(f"get_tuple of F0 gave {'nothing' if forked is None else 'other writes'} "
                     f"than its listing: {sorted(map(str, fork_writes))[:2]}")
    bad = bool(errors or found.bad or wrong_parent or stale or got_latest != newest) or \
        forked is None or fork_writes != listed_fork
    result = ("writer_error" if errors else "lossy" if found.lost else "foreign" if found.bad
              else "wrong_parent" if wrong_parent else "stale_resume" if stale
              else "wrong_latest" if got_latest != newest else "fork_read_differs" if bad
              else "both_lines")
    ctx.log(f"{len(listed)} checkpoints listed; {result}")
    return Trial(ctx.index, ctx.seed, bad,
                 Counts(lost=found.lost, foreign=found.foreign + found.torn + len(wrong_parent)
                        + len(stale), raised=len(errors)),
                 mode=f"{mode}:{result}", sample="; ".join(notes[:3]) or None,
                 ops=tuple(ctx.ops))


CHECK = CheckSpec(
    id=CHECK_ID,
    invariant="a fork from an earlier checkpoint, with an interrupt and its resumes on it, put "
    "while another run writes the thread's main line, leaves both lines whole: every "
    "checkpoint with its values and parent, every write on its checkpoint, the latest resume "
    "of a slot, the newest checkpoint as the thread's latest",
    fault="the main run's puts and writes released together with a fork from M1 (update_state "
    "as of an earlier checkpoint): F0, an interrupt, a resume, a second resume and the resumed "
    "task's output on it, F1",
    params=(
        Param("steps", 3, 2, 50, "checkpoints (each with its writes) before and during"),
        trials_param(4),
    ),
    run_trial=run_trial,
    mutants=("lg_reference_parent_is_latest", "lg_reference_special_writes_kept_first",
             "lg_contract_async_sqlite_parent_dropped", "lg_contract_sqlite_special_kept_first"),
    generated=(
        Selector("lg-reference", "ReferenceSaver.put_writes", "flip_comparison"),
        Selector("lg-async-sqlite-file", "AsyncSqliteSaver.aput_writes", "flip_comparison"),
        Selector("lg-memory", "InMemorySaver.put_writes", "flip_comparison"),
    ),
    timeout_s=60.0,
)
