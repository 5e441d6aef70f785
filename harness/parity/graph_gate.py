"""The parity gate's second kind of workflow: LangGraph graph runs on every checkpointer lane.

``GRAPH_KIND`` is what ``python -m arib --family langgraph parity check|update`` runs: the
same gate (``arib.parity.gate``: lanes in forked children, the comparison with the reference
lane, the criteria, the verdicts, the exit codes and the report of kind
``arib/agent-session-parity-v1``), with ``GRAPH_WORKFLOWS`` for workflows and
``arib.targets.langgraph.lanes.CHECKPOINTER_LANES`` under asyncio and uvloop for lanes. The
reference lane is ``lg-reference@asyncio``. A lane whose saver class serves both halves of the
interface runs twice: its async API (``<lane>@<loop>``) and its sync API
(``<lane>+sync@<loop>``). A lane that needs a server this run was not given is not measured,
with the reason. Results go to ``results/parity/langgraph-<version>/``.
"""

from __future__ import annotations

import dataclasses
import functools

from arib.ground.errors import UnknownNameError
from arib.ground.model import Loop
from arib.ground.services import NotMeasured
from arib.parity.graph_records import rules_table
from arib.parity.graph_steps import (
    SYNC_SUFFIX,
    Compile,
    History,
    Invoke,
    Resume,
    Rewind,
    play_graph,
)
from arib.parity.lanes import LaneSpec, named_targets, parse_loops
from arib.parity.options import GateOptions, Selection, WorkflowKind
from arib.parity.records import Workflow
from arib.parity.runner import run_lane_async
from arib.targets.base import TargetSpec

REFERENCE_TARGET = "lg-reference"
REFERENCE_LANE_NAME = f"{REFERENCE_TARGET}@{Loop.ASYNCIO.value}"
EDGE = "naïve café e\u0301 Å ﬁ 𝔘𝔫𝔦 👩‍👩‍👧 עברית العربية \u202e rtl \u0007 \\ \" '"


def _user(text: str, message_id: str) -> dict[str, object]:
    return {"messages": [{"role": "user", "content": text, "id": message_id}]}


GRAPH_WORKFLOWS: tuple[Workflow, ...] = (
    Workflow(
        "graph_tool_loop", "tools",
        "a fake chat model calls two tools at once, then one, then answers",
        (Compile("tool_loop"), Invoke(_user("Capitals of France and Japan, and 40+2?", "h-1")),
         History()),
    ),
    Workflow(
        "graph_tool_loop_streamed_unicode", "tools",
        "a streamed tool loop whose tool echoes combining marks, ZWJ emoji, RTL and NUL",
        (Compile("tool_loop_unicode"), Invoke(_user(EDGE, "h-1"), stream=True), History()),
    ),
    Workflow(
        "graph_interrupt_resume", "interrupt",
        "two interrupt() approvals, each resumed with Command(resume=...)",
        (Compile("approvals"), Invoke({"request": "the Q3 report — Ü"}), History(),
         Resume("yes ✓"), Resume({"ok": True, "by": "法務"}, stream=True), History()),
    ),
    Workflow(
        "graph_retry_policy", "retry",
        "a node fails twice and succeeds on its third attempt under a RetryPolicy",
        (Compile("retried"), Invoke({"request": "flaky work"}), History()),
    ),
    Workflow(
        "graph_failed_node_resume", "retry",
        "one of two parallel nodes fails: the run raises with the other's writes pending; "
        "resuming runs only the failed node",
        (Compile("failed_then_resumed"),
         Invoke({"request": "both"}, expect="ScriptedFailure"), History(),
         Invoke(None), History()),
    ),
    Workflow(
        "graph_time_travel_replay", "time-travel",
        "a finished run is replayed from an earlier checkpoint of its state history",
        (Compile("counter"), Invoke({"total": 0, "path": []}), Rewind("ten"), Invoke(None),
         History()),
    ),
    Workflow(
        "graph_time_travel_fork", "time-travel",
        "an earlier checkpoint is forked by update_state(as_node=...) and run from there",
        (Compile("counter"), Invoke({"total": 0, "path": []}),
         Rewind("hundred", update={"total": 1000, "path": ["forked ✂"]}, as_node="ten"),
         Invoke(None), History()),
    ),
    Workflow(
        "graph_subgraph_interrupt", "subgraph",
        "a subgraph interrupts inside its own namespace; the parent resumes it",
        (Compile("nested"), Invoke({"request": "inner job"}), History(), Resume("go ✓"),
         History()),
    ),
    Workflow(
        "graph_send_fan_out", "subgraph",
        "Send() maps four non-ASCII items to parallel worker tasks, reduced in order (not "
        "streamed: parallel tasks stream in the order they finish, which the schedule decides)",
        (Compile("fan_out"), Invoke({"items": ["α", "βγ", "東京", "👩‍👩‍👧"]}), History()),
    ),
    Workflow(
        "graph_large_non_ascii_state", "content",
        "about 350 KiB of mixed-script text written to state over three steps",
        (Compile("large_state"), Invoke({"chunks": [EDGE], "sizes": []}), History()),
    ),
)


def graph_targets() -> tuple[TargetSpec, ...]:
    """Every checkpointer lane's target, and a ``+sync`` variant of each lane whose class
    serves both halves of the saver interface (its async API runs under the lane's own name)."""
    from arib.targets.langgraph.lanes import API, CHECKPOINTER_LANES

    out: list[TargetSpec] = []
    for target in CHECKPOINTER_LANES:
        out.append(target)
        if API.get(target.name) == "both":
            out.append(dataclasses.replace(target, name=target.name + SYNC_SUFFIX))
    return tuple(out)


def select_graph_lanes(opts: GateOptions) -> Selection:
    """The graph lanes to run (reference lane first) and those not measured here.

    ``opts.lanes`` names targets or ``target@loop`` as for the sessions' gate; a lane that
    needs a service ``opts.services`` lacks is not measured, with the reason; an unknown name
    raises ``UnknownNameError`` listing the known ones.
    """
    known: dict[str, TargetSpec] = {}
    missing: list[NotMeasured] = []
    for target in graph_targets():
        if target.service and target.service not in opts.services:
            missing.append(NotMeasured(target.name, (
                f"not measured: needs service {target.service!r}, which this run was not "
                f"given (services: {sorted(opts.services)})")))
        else:
            known[target.name] = target
    wanted: list[LaneSpec] = []
    names = named_targets(opts.lanes)
    requested = opts.lanes.split(",") if isinstance(opts.lanes, str) else list(opts.lanes or ())
    if names is None:
        wanted = [LaneSpec(t, loop) for t in known.values() for loop in opts.loops]
    for name in (n.strip() for n in requested if n.strip()):
        target_name, _, loop_name = name.partition("@")
        if target_name not in known:
            if any(m.name == target_name for m in missing):
                continue
            raise UnknownNameError(
                f"unknown graph parity lane {name!r}: use one of "
                f"{', '.join([*known, *(m.name for m in missing)])} (optionally with @asyncio "
                "or @uvloop)"
            )
        loops = parse_loops(loop_name) if loop_name else opts.loops
        wanted.extend(LaneSpec(known[target_name], loop) for loop in loops)
    lanes = [LaneSpec(known[REFERENCE_TARGET], Loop.ASYNCIO)]
    for lane in wanted:
        if lane.name not in {x.name for x in lanes}:
            lanes.append(lane)
    return tuple(lanes), tuple(missing)


def graph_service_targets() -> tuple[TargetSpec, ...]:
    """The checkpointer lanes that need a server (started by the command line when named)."""
    return tuple(t for t in graph_targets() if t.service is not None)


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
    reference_lane=REFERENCE_LANE_NAME,
    select=select_graph_lanes,
    run_lane=functools.partial(run_lane_async, play=play_graph),
    preload=preload_graphs,
    rules=rules_table,
    default_workflows=lambda: GRAPH_WORKFLOWS,
    service_targets=graph_service_targets,
    generates_cases=False,
)
