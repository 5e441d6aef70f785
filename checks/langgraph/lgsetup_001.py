"""ARIB-LGSETUP-001: several instances setting up one fresh store at once all succeed, and the
store works.

``processes`` processes are forked before the store exists; released at one instant, each
opens its own saver on the trial's fresh store (the lane's builder) and runs its ``setup()``
where its class has one (a class with none, like our reference, sets the store up in its
constructor), then puts ``steps`` checkpoints with a task's writes on a thread of its own and
one shared by all, acknowledging each. Every open, setup and op must succeed, and a fresh
instance must then read back every acknowledged checkpoint and write, nothing foreign. A lane
whose store lives in one instance's memory abstains (the writers find it on their instance).
"""

from __future__ import annotations

from arib.checks.base import CheckSpec, Param, Selector, TrialContext
from arib.checks.common import trials_param
from arib.checks.langgraph import _writers
from arib.ground.model import Trial

RUN_TIMEOUT_S = 30.0


async def run_trial(ctx: TrialContext) -> Trial:
    """One trial: forked instances set one fresh store up at the same instant, then write."""
    processes, steps = ctx.params["processes"], ctx.params["steps"]
    shared = f"t{ctx.seed:x}-shared"
    names = [(w, shared if w % 2 else f"t{ctx.seed:x}-{w}") for w in range(processes)]
    ctx.rng.shuffle(names)
    ctx.log(f"fork {processes} processes before the store exists (order {[w for w, _ in names]});"
            f" at one instant each opens a saver on it and runs setup(), then puts {steps} "
            f"checkpoints with writes (odd writers on {shared}, even ones on their own thread)")
    return await _writers.race_and_judge(ctx, names, steps, RUN_TIMEOUT_S, "setup_failed",
                                         "working", setup_at_go=True)


CHECK = CheckSpec(
    id="ARIB-LGSETUP-001",
    invariant="several instances running setup() at once on one fresh store all succeed, and "
    "every checkpoint and write they then put is read back",
    fault="processes forked before the store exists, released at one instant to open a saver "
    "on it, run setup() and put checkpoints with writes",
    params=(
        Param("processes", 4, 2, 16, "instances, each in its own process"),
        Param("steps", 2, 1, 50, "checkpoints (each with its writes) per instance after setup"),
        # Six: the race among the servers' own setup() statements is seen at a rate (1 to 3 of
        # 3 trials on the PostgreSQL lanes), so that the gate judges a change by Fisher's
        # exact test rather than by a flip of three samples.
        trials_param(6, "independent trials, each on a fresh store (the race is real-time)"),
    ),
    run_trial=run_trial,
    mutants=("lg_reference_schema_not_idempotent", "lg_sqlite_migration_not_idempotent",
             "lg_async_sqlite_migration_not_idempotent"),
    generated=(
        # Our reference's schema step, so that the check is judged on a lane whose clean run
        # always holds: the real SQLite savers' own setup() races now and then (KNOWN_RACES in
        # tests/langgraph/test_faults.py), and their mutants are then not judgeable.
        Selector("lg-reference", "make_tables", "drop_if_not_exists"),
        Selector("lg-sqlite-file", "SqliteSaver.setup", "drop_if_not_exists"),
        Selector("lg-sqlite-file", "SqliteSaver.setup", "flip_comparison"),
        Selector("lg-async-sqlite-file", "AsyncSqliteSaver.setup", "flip_comparison"),
    ),
    equivalent={
        mutant: "flips `\"readonly database\" in str(e)` in setup's task_path migration: on the "
        "expected 'duplicate column name' the saver then stops writing task_path, which no "
        "read of this check can see (its writes use task_path '', and pending writes are read "
        "back without it); the store works either way"
        for mutant in ("m-4526f4a21226", "m-de359fa895da")
    },
    timeout_s=120.0,  # six trials; a busy SQLite file makes each wait out its busy timeout
)
