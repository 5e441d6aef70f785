"""ARIB-LGSTORE-008 (issue 35): ``setup()`` called at once by several workers on one store over a
fresh database (the runs of a deployment starting together) succeeds for every one of them, and
the store then keeps their writes, also with each worker calling ``setup()`` again before each
of its puts (runs starting while others write), and once more 10 ms into another worker's batch
of 2000 puts, which must return and be kept whole. The store is opened with ``from_conn_string``;
the rest of the trial is ARIB-LGSTORE-007's (``arib.checks.langgraph._lifecycle``).

The racing setup() calls and writes run as the trial's actors under its seeded scheduler
(random walk; threads switch at their sqlite3 calls and the store's locks): two threads of one
SqliteStore overlapping inside an unlocked setup() is then an interleaving the schedule picks,
not one real time grants in some trials. Timers: none under the scheduler (the 10 ms before
the setup beside the long batch is real time, outside it).
"""

from __future__ import annotations

from arib.checks.base import CheckSpec, Param, SchedulePlan, Selector, TrialContext
from arib.checks.common import trials_param
from arib.checks.langgraph._lifecycle import lifecycle
from arib.ground.model import Trial

CHECK_ID = "ARIB-LGSTORE-008"


async def run_trial(ctx: TrialContext) -> Trial:
    """One trial: open by string, setup() by every worker at once, then ARIB-LGSTORE-007's."""
    return await lifecycle(ctx, racing_setup=True)


CHECK = CheckSpec(
    id=CHECK_ID,
    invariant="setup() called at once by several workers on one store over a fresh database, "
    "and again by each before each of its puts and 10 ms into another's long batch, succeeds "
    "every time, and the store keeps their writes and the batch whole",
    fault="setup() released together from several threads or tasks on a store opened by its "
    "connection string on a fresh database, then their writes, then a batch of 2000 puts "
    "with another worker's setup() 10 ms into it",
    params=(Param("workers", 4, 2, 16, "threads or tasks calling setup() and writing"),
            trials_param(6, "trials, each on a fresh database and its own schedule")),
    run_trial=run_trial,
    mutants=("lg_store_reference_setup_resets", "lg_async_sqlite_store_setup_unlocked"),
    generated=(Selector("lg-store-async-sqlite-file", "AsyncSqliteStore.setup", "drop_lock"),
               Selector("lg-store-reference", "ReferenceStore.setup", "drop_lock"),
               # sampled in about 4 trials of 5 by real time before the scheduler; 6 of 6 now
               Selector("lg-store-sqlite-file", "SqliteStore.setup", "drop_lock")),
    timeout_s=30.0,
    reference="lg-store-reference",
    concurrent=True,
    schedule=SchedulePlan("random"),
)
