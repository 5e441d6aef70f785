"""The fault workflows: every fault a check injects, as a parity workflow.

A check judges one lane against its invariant; a fault workflow records how the lane came out
of the same fault (outcome classes, see ``arib.checks.parity.faultkit``), and the gate compares
that record with the reference lane's. So two drop-in backends that each keep an invariant in
different ways (one keeps a cancelled write, the other rolls it back) are a divergence, with
the differing record as evidence. The step docstrings say what is compared and why it does not
depend on a thread schedule.

| workflow | fault (check) |
|---|---|
| ``fault_cancelled_write`` | add_items cancelled at its suspension points (ARIB-CANCEL-001) |
| ``fault_close_races_write`` | close() while a write is in flight (a close racing an operation) |
| ``fault_writes_after_close`` | every write on a closed session (ARIB-CONC-003) |
| ``fault_concurrent_close`` | close() called by several tasks at once (ARIB-CONC-002) |
| ``fault_redelivery`` | the same batch delivered twice (ARIB-REPLAY-001) |
| ``fault_writer_killed`` | a writer process killed mid-stream (ARIB-DUR-001) |
| ``fault_concurrent_appends`` | concurrent single-item writers (ARIB-CONC-001) |
| ``fault_concurrent_batches`` | concurrent multi-item writers (ARIB-ORDER-001) |
| ``fault_clear_races_writers`` | clear_session racing writers (ARIB-CLEAR-001) |
| ``fault_concurrent_pops`` | concurrent pop_item (ARIB-POP-001) |
| ``fault_limit_reads_race_appends`` | limit reads racing writers (ARIB-LIMIT-001) |
| ``fault_peer_sessions`` | two session ids on one store (ARIB-ISO-001) |
| ``fault_instances_on_one_store`` | several instances and a process on one store (ARIB-MULTI-001) |
| ``fault_cancelled_first_call`` | a fresh instance's first call cancelled (ARIB-RELEASE-001) |
| ``fault_failed_open`` | a first call on a store with no folder yet (ARIB-RELEASE-001) |
| ``fault_cancelled_close`` | close() cancelled, then a read and a close (ARIB-RELEASE-001) |
| ``fault_misconfigured_tables`` | instances configured for other tables (ARIB-TABLES-001) |

ARIB-FIDELITY-001 injects no fault (it round-trips item shapes); the reference workflows'
content domain covers it. These workflows are not in the pool the generated cases draw from:
a fault's outcome class is a record of its own, not a read a later agent turn should build on.
"""

from __future__ import annotations

from arib.checks.openai_agents.parity.faults import (
    CancelledWrite,
    CloseRacesWrite,
    ConcurrentClose,
    Redelivery,
    WriterKilled,
    WritesAfterClose,
)
from arib.checks.openai_agents.parity.races import (
    ClearRacesWriters,
    ConcurrentAppends,
    ConcurrentBatches,
    ConcurrentPops,
    InstancesOnOneStore,
    LimitReadsRaceAppends,
    PeerSessions,
)
from arib.checks.openai_agents.parity.store_faults import (
    CancelledClose,
    CancelledFirstCall,
    FailedOpen,
    MisconfiguredTables,
)
from arib.checks.openai_agents.parity.workflows import REFERENCE_WORKFLOWS, Workflow

FAULT_WORKFLOWS: tuple[Workflow, ...] = (
    Workflow(
        "fault_cancelled_write",
        "fault:cancel",
        "add_items cancelled at its first, last and middle suspensions: kept or rolled back",
        (CancelledWrite(),),
    ),
    Workflow(
        "fault_close_races_write",
        "fault:close",
        "close() while add_items waits at a suspension: settled, lost or half-written",
        (CloseRacesWrite(),),
    ),
    Workflow(
        "fault_writes_after_close",
        "fault:close",
        "add, add([]), pop and clear on a closed session: refused loudly or not",
        (WritesAfterClose(),),
    ),
    Workflow(
        "fault_concurrent_close",
        "fault:close",
        "four close() calls at once, then reads: idempotent and refused",
        (ConcurrentClose(),),
    ),
    Workflow(
        "fault_redelivery",
        "fault:redelivery",
        "a batch of items with ids delivered twice: stored once or twice",
        (Redelivery(),),
    ),
    Workflow(
        "fault_writer_killed",
        "fault:process",
        "a writer process killed after three acknowledged appends: acknowledged ones kept",
        (WriterKilled(),),
    ),
    Workflow(
        "fault_concurrent_appends",
        "fault:concurrency",
        "four writers append three items each, together: every item once, in writer order",
        (ConcurrentAppends(),),
    ),
    Workflow(
        "fault_concurrent_batches",
        "fault:concurrency",
        "three writers add two 3-item batches each, together: batches whole and in order",
        (ConcurrentBatches(),),
    ),
    Workflow(
        "fault_clear_races_writers",
        "fault:concurrency",
        "clear_session races two batch writers: the state of some serial order",
        (ClearRacesWriters(),),
    ),
    Workflow(
        "fault_concurrent_pops",
        "fault:concurrency",
        "three pops at once on five items, then on two: newest first, each once",
        (ConcurrentPops(),),
    ),
    Workflow(
        "fault_limit_reads_race_appends",
        "fault:concurrency",
        "limit reads while two writers append: each window a suffix of some prefix",
        (LimitReadsRaceAppends(),),
    ),
    Workflow(
        "fault_peer_sessions",
        "fault:concurrency",
        "two session ids on one store race appends, a pop and a clear: never each other's",
        (PeerSessions(),),
    ),
    Workflow(
        "fault_instances_on_one_store",
        "fault:process",
        "two instances and a second process append at one instant: every item kept",
        (InstancesOnOneStore(),),
    ),
    Workflow(
        "fault_cancelled_first_call",
        "fault:release",
        "a fresh instance's first read cancelled while it connects: next read served, "
        "files released once closed",
        (CancelledFirstCall(),),
    ),
    Workflow(
        "fault_failed_open",
        "fault:release",
        "a first call on a store whose folder does not exist: the store's own error, then "
        "served once the folder exists",
        (FailedOpen(),),
    ),
    Workflow(
        "fault_cancelled_close",
        "fault:release",
        "close() cancelled at its suspensions: ends cancelled, one more close() releases "
        "every file",
        (CancelledClose(),),
    ),
    Workflow(
        "fault_misconfigured_tables",
        "fault:tables",
        "instances configured for tables the store does not hold: refused with ValueError, "
        "the store unchanged",
        (MisconfiguredTables(),),
    ),
)

# What the gate runs on every lane: the agent workflows, then the fault workflows.
GATE_WORKFLOWS: tuple[Workflow, ...] = REFERENCE_WORKFLOWS + FAULT_WORKFLOWS
