"""ARIB-LGCONC-002: checkpoints and writes put by several processes at once are all read back.

``processes`` writer processes are forked before anything is open on the store; each opens its
own saver on the trial's store (the lane's builder) and puts ``steps`` checkpoints on thread
``w % threads`` (each a child of its previous) and a task's writes to each, acknowledging every
op to this process. Even trials release the ops one at a time in the order of the trial's
seeded scheduler (each after the previous one's acknowledgement: every decision controlled, so
a replay releases them in the same order); odd trials release every writer at one instant and
let them run free, as they come (one uncontrolled decision). After every writer finished (or
stopped), a fresh instance lists every thread: every acknowledged checkpoint with its values,
every acknowledged write on its checkpoint, nothing foreign. A lane whose store lives in one
instance's memory abstains (the writers find it on their instance).
"""

from __future__ import annotations

from arib.checks.base import CheckSpec, Param, SchedulePlan, Selector, TrialContext, describe
from arib.checks.common import RATE_TRIALS, trials_param
from arib.checks.langgraph import _writers
from arib.ground.model import Counts, Trial

RUN_TIMEOUT_S = 30.0


async def run_trial(ctx: TrialContext) -> Trial:
    """One trial: forked writers race on shared thread ids; a fresh instance reads back."""
    processes, steps, threads = (ctx.params["processes"], ctx.params["steps"],
                                 ctx.params["threads"])
    thread_ids = [f"t{ctx.seed:x}-{k}" for k in range(threads)]
    names = [(w, thread_ids[w % threads]) for w in range(processes)]
    ctx.rng.shuffle(names)
    scheduled = ctx.index % 2 == 0
    ctx.log(f"fork {processes} writer processes (fork order {[w for w, _ in names]}); each "
            f"opens its own saver on the store, then "
            + ("their ops are released one at a time in the schedule's order; " if scheduled
               else "all are released at one instant, free; ") +
            f"writer w on thread w % {threads}: {steps} x (put a checkpoint; put_writes x2 "
            f"to it)")
    # The store is set up once first, by an instance of this process, so that the writers
    # race on their puts; the race of setup() itself is ARIB-LGSETUP-001's. Opening is not
    # enough: SqliteSaver runs its setup() at its first call (PRAGMA journal_mode=WAL on a
    # new file among it), and writers racing there raised "database is locked" at op 0.
    ctx.log("set the store up once first: open an instance here, run its setup() where its "
            "class has one, dispose it")
    handle = await ctx.open()
    try:
        await _writers.run_setup(handle.session)
    except Exception as exc:  # noqa: BLE001 - a saver that cannot set its store up keeps nothing
        return Trial(ctx.index, ctx.seed, True, Counts(raised=1), mode="setup_failed",
                     sample=f"setup() on a fresh store raised {describe(exc)}",
                     ops=tuple(ctx.ops))
    await ctx.dispose()
    return await _writers.race_and_judge(ctx, names, steps, RUN_TIMEOUT_S, "writer_error",
                                         "exact", scheduled=scheduled)


CHECK = CheckSpec(
    id="ARIB-LGCONC-002",
    invariant="checkpoints and writes put at once by several processes, each with its own "
    "saver on one store, on one thread id or several, are all read back and none is foreign",
    fault="processes forked writers, each putting steps checkpoints "
    "and a task's writes to each on thread w % threads, acknowledging every op over a pipe; "
    "one op at a time in a seeded order on even trials, all at one instant and free on odd",
    params=(
        Param("processes", 3, 2, 16, "writer processes"),
        Param("steps", 4, 1, 100, "checkpoints (each with its writes) per writer"),
        Param("threads", 2, 1, 16, "thread ids the writers share (1: all on one)"),
        trials_param(RATE_TRIALS),
    ),
    run_trial=run_trial,
    mutants=("lg_reference_writes_to_latest", "lg_async_sqlite_writes_to_latest",
             "lg_sqlite_writes_to_latest"),
    generated=(
        Selector("lg-reference", "ReferenceSaver.aput", "early_return"),
        Selector("lg-async-sqlite-file", "AsyncSqliteSaver.aput_writes", "early_return"),
    ),
    timeout_s=120.0,  # four trials; on a busy SQLite file each can wait its busy timeout
    concurrent=True,
    schedule=SchedulePlan("random", timers="real"),
)
