"""The fault workflows: every fault a check injects, as a parity workflow, derived from the
checks.

A check judges one lane against its invariant; a fault workflow records how the lane came out
of the same fault (outcome classes, see ``arib.checks.parity.faultkit``), and the gate compares
that record with the reference lane's. So two drop-in backends that each keep an invariant in
different ways (one keeps a cancelled write, the other rolls it back) are a divergence, with
the differing record as evidence. The step docstrings say what is compared and why it does not
depend on a thread schedule.

Each check names its fault's workflow and step (``CheckSpec.parity``); ``FAULT_WORKFLOWS`` is
every such workflow of the family's checks, in check order, after the gate's own fault that no
check injects (``fault_close_races_write``: close() while a write is in flight).
``fault_workflow_table()`` gives the workflow and check of each (the table in
harness/README.md).

ARIB-FIDELITY-001 injects no fault (it round-trips item shapes); the reference workflows'
content domain covers it. These workflows are not in the pool the generated cases draw from:
a fault's outcome class is a record of its own, not a read a later agent turn should build on.
"""

from __future__ import annotations

from arib.checks.openai_agents.parity.faults import CloseRacesWrite
from arib.checks.openai_agents.parity.workflows import REFERENCE_WORKFLOWS, Workflow
from arib.checks.registry import load_checks

CHECKS_PACKAGE = "arib.checks.openai_agents"

# The gate's own fault, which no check injects: a close that races a write in flight.
CLOSE_RACES_WRITE = Workflow(
    "fault_close_races_write",
    "fault:close",
    "close() while add_items waits at a suspension: settled, lost or half-written",
    (CloseRacesWrite(),),
)


def fault_workflow_table() -> tuple[tuple[str, str], ...]:
    """(workflow, check id) of every fault workflow derived from a check, in check order."""
    return tuple((fault.name, check.id) for check in load_checks(CHECKS_PACKAGE)
                 for fault in check.parity)


def derived_fault_workflows() -> tuple[Workflow, ...]:
    """Every check's fault as a workflow (``CheckSpec.parity``), in check order."""
    return tuple(Workflow(fault.name, fault.domain, fault.description, (fault.build_step(),))
                 for check in load_checks(CHECKS_PACKAGE) for fault in check.parity)


FAULT_WORKFLOWS: tuple[Workflow, ...] = (CLOSE_RACES_WRITE, *derived_fault_workflows())

# What the gate runs on every lane: the agent workflows, then the fault workflows.
GATE_WORKFLOWS: tuple[Workflow, ...] = REFERENCE_WORKFLOWS + FAULT_WORKFLOWS
