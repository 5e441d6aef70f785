"""``WorkflowKind``: all a family changes in the parity gate.

The gate's rules (lanes in forked children, the comparison with the reference lane, the
criteria, the verdicts, the exit codes and the report contract) are the same for every family;
a family's record names its kind (``Family.parity``), defined in ``checks/<family>/parity/``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from arib.checks.parity.records import Workflow, WorkflowResult
from arib.ground.model import Loop
from arib.ground.services import NotMeasured
from arib.targets.base import TargetSpec

# How a lane plays one workflow on the object its target built: (workflow, that object,
# lane=, case_seed=, store=) -> its result.
Play = Callable[..., Awaitable[WorkflowResult]]
# Every lane target of the gate (the reference first, then local and service lanes, each
# under its parity name) and those that cannot run here, with the reason.
Targets = tuple[tuple[TargetSpec, ...], tuple[NotMeasured, ...]]


@dataclass(frozen=True)
class CasePool:
    """What generated cases are composed from: the workflows whose steps they shuffle,
    interleave, repeat and truncate, and a step a case may end with (half of them do)."""

    workflows: Callable[[], Sequence[Workflow]]
    closing_step: Callable[[], Any] | None = None


@dataclass(frozen=True)
class WorkflowKind:
    """A family's parity workflows and where they run.

    ``targets`` gives every lane target (each runs under every selected event loop; the
    reference target under asyncio only is the lane the others are compared with); ``play``
    plays one workflow in a lane's child; ``preload`` imports in the parent what every child
    needs beyond its lane's backend and drivers (the gate imports those of every target first,
    ``arib.warm``); ``rules`` is the written table of normalization rules;
    ``default_workflows`` what runs when no workflow is named; ``cases`` the pool of generated
    cases (None: the family has none); ``folder_prefix`` goes before the version in the name
    of the family's folder under ``results/parity/``.
    """

    family: str
    reference_target: str
    targets: Callable[[], Targets]
    play: Play
    preload: Callable[[], None]
    rules: Callable[[], list[dict[str, str]]]
    default_workflows: Callable[[], tuple[Workflow, ...]]
    cases: CasePool | None = None
    folder_prefix: str = ""

    @property
    def reference_lane(self) -> str:
        """The reference lane's name: the reference target under asyncio."""
        return f"{self.reference_target}@{Loop.ASYNCIO.value}"

    @property
    def generates_cases(self) -> bool:
        """Whether the family's gate runs generated cases."""
        return self.cases is not None

    def service_targets(self) -> tuple[TargetSpec, ...]:
        """The lane targets that need a server (the command line starts those a selection
        names)."""
        return tuple(t for t in self.targets()[0] if t.service is not None)

    def folder(self, version: str) -> str:
        """The name of this kind's folder under ``results/parity/`` for ``version``."""
        return f"{self.folder_prefix}{version}"
