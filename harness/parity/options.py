"""The parity gate's options, checked without importing the SDK or starting anything.

``GateOptions`` is everything that parameterizes a gate run; the command line validates it
(and the lane and mutant names) before any server starts, so this module stays light: it never
imports the SDK, whose import alone takes seconds on a busy machine.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from arib.checks.parity.kind import WorkflowKind
from arib.checks.parity.records import Workflow
from arib.ground.errors import UsageError
from arib.ground.model import Loop
from arib.ground.services import NotMeasured
from arib.parity.lanes import Selection, select_lanes
from arib.targets.base import TargetSpec

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


def active_kind() -> WorkflowKind:
    """The active family's ``WorkflowKind`` (its record's ``parity``); UsageError for a
    family with no parity workflows."""
    from arib.ground.family import active_family, all_families

    family = active_family()
    if not family.parity:
        with_gate = [f.name for f in all_families() if f.parity]
        raise UsageError(
            f"family {family.name!r} has no parity workflows (families with a parity gate: "
            f"{', '.join(with_gate)}); run parity with --family set to one of them"
        )
    return family.resolve_as("parity", WorkflowKind)


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
    # What the workflows are and where they run: the active family's unless given.
    kind: WorkflowKind = field(default_factory=active_kind)

    @property
    def run_workflows(self) -> tuple[Workflow, ...]:
        """The workflows to run: those given, else the kind's."""
        return self.workflows or self.kind.default_workflows()

    def selection(self) -> Selection:
        """The lanes to run (reference lane first) and those not measured here; an unknown
        lane raises UnknownNameError."""
        return select_lanes(self.kind, self.lanes, self.loops, self.extra_targets, self.services)

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
