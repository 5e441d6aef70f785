"""A trial judged by the problems it found, in order (shared by ARIB-KEY-001, ARIB-BUDGET-001,
ARIB-RELEASE-001, ARIB-RETRY-001, ARIB-TTL-001)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from arib.checks.common import label
from arib.ground.model import Counts, Trial
from arib.ground.shorten import join_within

if TYPE_CHECKING:
    from arib.checks.base import TrialContext

# (mode, text) of one problem a trial found
Problem = tuple[str, str]


def labels(items: list[Any], last: int = 4) -> str:
    """The last few items' labels and how many there are, for a sample."""
    return f"{[label(i) for i in items][-last:]} ({len(items)})"


def problems_trial(ctx: TrialContext, problems: list[Problem], counts: Counts,
                   held_mode: str) -> Trial:
    """Violated when any problem was found: its mode is the first one's, its sample the first
    two texts; else held, in ``held_mode``."""
    return Trial(ctx.index, ctx.seed, bool(problems), counts,
                 mode=problems[0][0] if problems else held_mode,
                 sample=join_within([text for _, text in problems[:2]], 400) if problems else None,
                 ops=tuple(ctx.ops))


@dataclass
class Problems:
    """A trial's problems in order and its counts, kept as it goes; judged by ``trial``."""

    problems: list[Problem] = field(default_factory=list)
    lost: int = 0
    duplicated: int = 0
    foreign: int = 0
    wrong_result: int = 0  # calls that returned a wrong result
    raised: int = 0  # calls that had to succeed and raised

    def add(self, mode: str, text: str) -> None:
        """Note one problem, after those already found."""
        self.problems.append((mode, text))

    def trial(self, ctx: TrialContext, held_mode: str) -> Trial:
        """The trial these problems and counts make (``problems_trial``)."""
        counts = Counts(lost=self.lost, duplicated=self.duplicated, foreign=self.foreign,
                        wrong_result=self.wrong_result, raised=self.raised)
        return problems_trial(ctx, self.problems, counts, held_mode)
