"""The parity gate's options, checked without importing the SDK or starting anything.

``GateOptions`` is everything that parameterizes a gate run; the command line validates it
(and the lane and mutant names) before any server starts, so this module stays light: it never
imports the SDK, whose import alone takes seconds on a busy machine.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from arib.ground.errors import UsageError
from arib.ground.model import Loop
from arib.ground.services import NotMeasured
from arib.parity.lanes import REFERENCE_LANE, LaneSpec
from arib.targets.base import TargetSpec

if TYPE_CHECKING:
    from arib.parity.records import Workflow
    from arib.parity.runner import LaneReport

DEFAULT_BUDGET_MS = 60_000.0
DEFAULT_P95_MIN_SAMPLES = 8
DEFAULT_CASES = 40
LANE_TIMEOUT_S = 300.0
RESULTS_DIR = Path("results")  # beside where the command runs, as the bench's


def default_workers() -> int:
    """Lanes run at once by default: two where there are two cores, else one."""
    return 2 if (os.cpu_count() or 1) >= 2 else 1


def _fast_tmpdir() -> str | None:
    from arib.execute import fast_tmpdir

    return fast_tmpdir()


Selection = tuple[tuple[LaneSpec, ...], tuple[NotMeasured, ...]]


@dataclass(frozen=True)
class WorkflowKind:
    """What a gate run's workflows are and where they run: all a family changes in the gate.

    The gate's rules (the comparison with the reference lane, the criteria, the verdicts, the
    exit codes and the report contract) are the same for every kind. ``select`` gives the lanes
    (reference lane first) and those not measured here; ``run_lane`` runs one lane's workflows
    in its child (``runner.run_lane_async``'s signature); ``rules`` is the written table of
    normalization rules; ``default_workflows`` what runs when no workflow is named.
    """

    family: str
    reference_lane: str
    select: Callable[[GateOptions], Selection]
    run_lane: Callable[..., Awaitable[LaneReport]]
    preload: Callable[[], None]
    rules: Callable[[], list[dict[str, str]]]
    default_workflows: Callable[[], tuple[Workflow, ...]]
    # The lanes that need a server: the command line starts those the selection names.
    service_targets: Callable[[], tuple[TargetSpec, ...]]
    generates_cases: bool = True

    def folder(self, version: str) -> str:
        """The name of this kind's folder under ``results/parity/`` for ``version``: the
        version alone for openai-agents (as before families), else ``<family>-<version>``."""
        return version if self.family == "openai-agents" else f"{self.family}-{version}"


def _agent_select(opts: GateOptions) -> Selection:
    from arib.parity.lanes import select_lanes

    return select_lanes(opts.lanes, opts.loops, opts.extra_targets, opts.services)


async def _agent_lane(*args: Any) -> LaneReport:
    from arib.parity.runner import run_lane_async

    return await run_lane_async(*args)


def _agent_preload() -> None:
    from arib.parity.runner import preload

    preload()


def _agent_rules() -> list[dict[str, str]]:
    from arib.parity.normalize import rules_table

    return rules_table()


def _agent_workflows() -> tuple[Workflow, ...]:
    from arib.parity.fault_workflows import GATE_WORKFLOWS

    return GATE_WORKFLOWS


def _agent_service_targets() -> tuple[TargetSpec, ...]:
    from arib.targets.openai_agents.services import SERVICE_TARGETS

    return tuple(t for t in SERVICE_TARGETS if t.service is not None)


# The sessions' kind: offline openai-agents runs and fault workflows on every session lane.
AGENT_KIND = WorkflowKind(
    family="openai-agents",
    reference_lane=REFERENCE_LANE.name,
    select=_agent_select,
    run_lane=_agent_lane,
    preload=_agent_preload,
    rules=_agent_rules,
    default_workflows=_agent_workflows,
    service_targets=_agent_service_targets,
)


@dataclass(frozen=True)
class GateOptions:
    """Everything that parameterizes a gate run (the CLI maps its options onto this)."""

    lanes: str | Sequence[str] | None = None
    loops: tuple[Loop, ...] = (Loop.ASYNCIO, Loop.UVLOOP)
    budget_ms: float = DEFAULT_BUDGET_MS
    p95_min_samples: int = DEFAULT_P95_MIN_SAMPLES
    seed: int = 0
    cases: int = DEFAULT_CASES
    case_seed: int | None = None
    reuse: bool = False
    mutant: str | None = None
    extra_targets: tuple[TargetSpec, ...] = ()
    services: Mapping[str, str] = field(default_factory=dict)
    results_dir: Path = RESULTS_DIR
    lane_timeout_s: float = LANE_TIMEOUT_S
    # The workflows every lane runs; empty means the gate's own (``run_workflows``).
    workflows: tuple[Workflow, ...] = ()
    # Lanes whose service could not be had here (the CLI's service manager says why).
    unavailable: tuple[NotMeasured, ...] = ()
    # Where each lane's temporary stores live: tmpfs when there is one (see run_lane_async).
    tmpdir: str | None = field(default_factory=_fast_tmpdir)
    # Lanes run at once, each in its own process and temporary root (see run_lanes).
    workers: int = field(default_factory=default_workers)
    # What the workflows are: the sessions' agent runs, or another family's (graph runs).
    kind: WorkflowKind = AGENT_KIND

    @property
    def run_workflows(self) -> tuple[Workflow, ...]:
        """The workflows to run: those given, else the kind's (for the sessions, the agent and
        fault workflows)."""
        return self.workflows or self.kind.default_workflows()

    def validate(self) -> None:
        """Raise UsageError naming the first bad value."""
        if not (self.budget_ms > 0):
            raise UsageError(f"budget_ms must be > 0, got {self.budget_ms!r}")
        if self.p95_min_samples < 1:
            raise UsageError(f"p95_min_samples must be >= 1, got {self.p95_min_samples!r}")
        if self.cases < 0:
            raise UsageError(f"cases must be >= 0, got {self.cases!r}")
        if self.case_seed is not None and self.case_seed < 0:
            raise UsageError(f"case_seed must be >= 0, got {self.case_seed!r}")
        if self.lane_timeout_s <= 0:
            raise UsageError(f"lane_timeout_s must be > 0, got {self.lane_timeout_s!r}")
        if self.cases and not self.kind.generates_cases:
            raise UsageError(
                f"{self.kind.family} parity workflows have no generated cases (got cases "
                f"{self.cases!r}); use --cases 0"
            )
        if not self.loops:
            raise UsageError("at least one event loop is needed (asyncio, uvloop)")
        if self.workers < 1:
            raise UsageError(
                f"workers must be >= 1 (lanes run at once), got {self.workers!r}; use 1 to "
                "run the lanes one after the other"
            )

    def parameters(self) -> dict[str, Any]:
        """The run's parameters as the gate report records them."""
        return {
            "lanes": (
                self.lanes
                if isinstance(self.lanes, str) or self.lanes is None
                else ",".join(self.lanes)
            ),
            "loops": [loop.value for loop in self.loops],
            "budget_ms": self.budget_ms,
            "p95_min_samples": self.p95_min_samples,
            "seed": self.seed,
            "cases": self.cases,
            "case_seed": self.case_seed,
            "reuse": self.reuse,
            "mutant": self.mutant,
            "extra_targets": [t.name for t in self.extra_targets],
            "services": sorted(self.services),
            "lane_timeout_s": self.lane_timeout_s,
            "tmpdir": f"tmpfs ({self.tmpdir})" if self.tmpdir else "system default",
            "workers": self.workers,
        }


def _inside(path: Path, folder: Path) -> bool:
    try:
        path.resolve().relative_to(folder.resolve())
    except ValueError:
        return False
    return True


def out_inside_results(out: Path, results_dir: Path) -> None:
    """UsageError when ``out`` lies inside the results folder (check is read-only there)."""
    if _inside(out, results_dir):
        raise UsageError(
            f"--out {str(out)!r} is inside the results folder {str(results_dir)!r}; check "
            "is read-only there: use `parity update` to write results"
        )
