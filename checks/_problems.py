"""A trial judged by the problems it found, in order (shared by ARIB-KEY-001, ARIB-BUDGET-001)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from checks.common import label
from harness.model import Counts, Trial

if TYPE_CHECKING:
    from checks.base import TrialContext

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
                 sample="; ".join(text for _, text in problems[:2])[:400] if problems else None,
                 ops=tuple(ctx.ops))
