"""The parity gate's second kind of workflow: LangGraph graph runs on every checkpointer lane.

``GRAPH_KIND`` is what ``python -m arib --family langgraph parity check|update`` runs: the
same gate (``arib.parity.gate``: lanes in forked children, the comparison with the reference
lane, the criteria, the verdicts, the exit codes and the report of kind
``arib/agent-session-parity-v1``), with ``workflows.GRAPH_WORKFLOWS`` for workflows and
``arib.targets.langgraph.lanes.CHECKPOINTER_LANES`` under asyncio and uvloop for lanes. The
reference lane is ``lg-reference@asyncio``. A lane whose saver class serves both halves of the
interface runs twice: its async API (``<lane>@<loop>``) and its sync API
(``<lane>+sync@<loop>``). A lane that needs a server this run was not given is not measured,
with the reason. Results go to ``results/parity/langgraph-<version>/``.
"""

from __future__ import annotations

import dataclasses

from arib.checks.langgraph.parity.records import rules_table
from arib.checks.langgraph.parity.steps import SYNC_SUFFIX, play_graph
from arib.checks.langgraph.parity.workflows import GRAPH_WORKFLOWS
from arib.checks.parity.kind import WorkflowKind
from arib.targets.base import TargetSpec

REFERENCE_TARGET = "lg-reference"


def graph_targets() -> tuple[TargetSpec, ...]:
    """Every checkpointer lane's target (installed packages' too), and a ``+sync`` variant of
    each lane whose class serves both halves of the saver interface (its async API runs under
    the lane's own name)."""
    from arib.targets.langgraph.lanes import API, checkpointer_lanes

    out: list[TargetSpec] = []
    for target in checkpointer_lanes():
        out.append(target)
        if API.get(target.name) == "both":
            out.append(dataclasses.replace(target, name=target.name + SYNC_SUFFIX))
    return tuple(out)


def preload_graphs() -> None:
    """Import what every graph lane needs once in the parent, so each forked child starts warm."""
    import aiosqlite  # noqa: F401
    import langgraph.checkpoint.memory  # noqa: F401
    import langgraph.checkpoint.sqlite  # noqa: F401
    import langgraph.checkpoint.sqlite.aio  # noqa: F401
    import langgraph.graph  # noqa: F401

    import arib.targets.langgraph.graphs  # noqa: F401

    try:
        import uvloop  # noqa: F401
    except ImportError:
        pass


GRAPH_KIND = WorkflowKind(
    family="langgraph",
    reference_target=REFERENCE_TARGET,
    targets=lambda: (graph_targets(), ()),
    play=play_graph,
    preload=preload_graphs,
    rules=rules_table,
    default_workflows=lambda: GRAPH_WORKFLOWS,
    folder_prefix="langgraph-",
)
