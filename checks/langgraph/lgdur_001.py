"""ARIB-LGDUR-001: every acknowledged put and put_writes survives the writer being killed.

A writer process is forked before anything is open on the store; it opens its own saver with
the lane's builder and runs a plan of ``steps`` x (put a checkpoint, child of its previous;
put_writes of a task's writes to it) on one thread, acknowledging each op to this process.
After a seeded number of acknowledgements (at least one put and one put_writes) this process
kills it with SIGKILL, mid-stream, reaps it and drains the acknowledgements still in the pipe.
A fresh instance then lists the thread: every acknowledged checkpoint with its values and
every acknowledged write there; the op that was in flight wholly there or wholly absent;
nothing that was never sent. A lane whose store lives in one instance's memory abstains (the
writer finds it on its instance: ``Handle.private_store``).
"""

from __future__ import annotations

import time

from arib.checks import _forked
from arib.checks.base import CheckSpec, NotApplicable, Param, Selector, TrialContext, describe
from arib.checks.common import RATE_TRIALS, trials_param
from arib.checks.langgraph import _writers
from arib.checks.langgraph._faults import judge, read_threads, writer_plan
from arib.ground.model import Counts, Trial

ACK_TIMEOUT_S = 20.0


async def run_trial(ctx: TrialContext) -> Trial:
    """One trial: a forked writer killed after a seeded number of acknowledgements."""
    steps = ctx.params["steps"]
    thread = f"t{ctx.seed:x}"
    kill_after = ctx.rng.randint(2, 2 * steps - 2)
    ctx.log(f"fork a writer process; it opens its own saver on the store and runs {steps} x "
            f"(put a checkpoint; put_writes x2 to it) on {thread}, acknowledging each op")
    outcome = _writers.Outcome()
    workers: list[_forked.Worker] = []
    try:
        problems = await _writers.start(ctx, [(0, thread)], steps, workers)
        deadline = time.monotonic() + ACK_TIMEOUT_S
        while not problems and not outcome.problems and len(outcome.acked) < kill_after:
            message = await _forked.next_message(workers[0], deadline)
            if message is None:
                problems.append(f"the writer stopped after {len(outcome.acked)} acks")
                break
            _writers.record(outcome, message, "writer")
            if outcome.finished:
                break
        ctx.log(f"after {len(outcome.acked)} acknowledgements: SIGKILL the writer (mid-stream)")
        _forked.kill(workers[0])
        for message in _forked.drain_after_exit(workers[0]):
            _writers.record(outcome, message, "writer")
    finally:
        _forked.reap(workers)
    acked = sorted(outcome.acked)
    in_flight = (max(acked) + 1) if acked else 0
    ctx.log(f"writer {workers[0].describe_exit()}; acknowledged ops 0..{in_flight - 1}; op "
            f"{in_flight} may have been in flight")
    ctx.log(f"fresh instance on the store: list {thread}")
    try:
        probe = await ctx.open()
        if probe.private_store:
            raise NotApplicable(f"ARIB-LGDUR-001 does not apply to {ctx.target.name!r}: "
                                f"{probe.private_store}")
        plan = writer_plan(probe.session, ctx.seed, 0, thread, steps)
        seen = await read_threads(probe.session, [thread])
    except NotApplicable:
        raise
    except Exception as exc:  # noqa: BLE001 - a store that cannot be read after the kill
        return Trial(ctx.index, ctx.seed, True, Counts(lost=len(acked), raised=1),
                     mode="read_raised", sample=f"reading after the kill raised "
                     f"{describe(exc)}", ops=tuple(ctx.ops))
    found = judge(plan, acked, seen)
    # An op after the one in flight was never sent: it cannot be there.
    for n, op in enumerate(plan[in_flight + 1:], start=in_flight + 1):
        got = seen.get(thread, {}).get(op.checkpoint_id)
        if got is not None and (op.kind == "put" or op.triples() & got[1]):
            found.foreign += 1
            found.notes.append(f"op {n} ({op.label}) was never sent before the kill")
    problems.extend(outcome.problems)
    counts = (Counts(lost=found.lost, foreign=found.foreign + found.torn)
              + _writers.problem_counts(problems))
    mode = ("writer_error" if problems else "acked_lost" if found.lost else
            "torn_or_foreign" if found.bad else "durable")
    return Trial(ctx.index, ctx.seed, mode != "durable", counts, mode=mode,
                 sample="; ".join([*problems, *found.notes][:3]) or None, ops=tuple(ctx.ops))


CHECK = CheckSpec(
    id="ARIB-LGDUR-001",
    invariant="every put and put_writes acknowledged before the writer process is killed is "
    "there after reopening, the op in flight is wholly there or absent, nothing unsent is",
    fault="a forked writer puts checkpoints and writes one op at a time, acknowledging each "
    "over a pipe, and is killed with SIGKILL after a seeded number of acknowledgements",
    params=(
        Param("steps", 8, 3, 200, "checkpoints (each with its writes) the writer would put"),
        trials_param(RATE_TRIALS),
    ),
    run_trial=run_trial,
    mutants=("lg_reference_write_behind", "lg_async_sqlite_never_commits"),
    generated=(
        Selector("lg-reference", "ReferenceSaver.aput", "early_return"),
        Selector("lg-sqlite-file", "SqliteSaver.cursor", "drop_commit"),
        Selector("lg-async-sqlite-file", "AsyncSqliteSaver.aput_writes", "early_return"),
    ),
    timeout_s=60.0,
    on_disk=True,
)
