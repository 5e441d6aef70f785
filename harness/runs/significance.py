"""Fisher's exact test on two runs of a cell: did its rate of violating trials change?

A cell's trials are a 2x2 table, violating and non-violating trials of the baseline and of the
run. With the column totals fixed, the baseline's violating trials follow the hypergeometric
law; the two-sided p-value is the probability, under "both runs share one rate", of every
table no more likely than the one observed. Computed with integers (``math.comb``), so tables
of equal probability tie exactly, with no tolerance.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from arib.ground.errors import UsageError

# The regression gate's significance level: a change of a racy cell's rate gates when its
# p-value is below it. 0.05 because the gate must still see a regression at the trial counts
# checks run with: at 0.05, a flip from none to every trial is significant from 4 trials a
# side (p=0.029), at 0.01 only from 5 (p=0.0079). The test is exact and conservative: for a
# cell whose rate did not change, whatever that rate, the chance that the gate fails on it
# stays below alpha (at most 0.0078 with 4 trials a side, 0.029 with any equal count up to 20).
ALPHA = 0.05


@dataclass(frozen=True)
class RateTest:
    """Fisher's exact test of one cell: violating trials of the baseline and of the run."""

    violating_before: int
    trials_before: int
    violating_after: int
    trials_after: int
    p_value: float
    alpha: float = ALPHA

    @property
    def rate_before(self) -> float:
        """The baseline's share of violating trials."""
        return self.violating_before / self.trials_before

    @property
    def rate_after(self) -> float:
        """The run's share of violating trials."""
        return self.violating_after / self.trials_after

    @property
    def significant(self) -> bool:
        """Whether the rates differ at the level ``alpha``."""
        return self.p_value < self.alpha

    @property
    def can_be_significant(self) -> bool:
        """Whether any outcome with these trial counts could be significant (0/1 -> 1/1:
        never, whatever happened)."""
        return least_p(self.trials_before, self.trials_after) < self.alpha

    def rates(self) -> str:
        """Both rates as counts: 'rate 0/4 -> 3/4'."""
        return (f"rate {self.violating_before}/{self.trials_before} -> "
                f"{self.violating_after}/{self.trials_after}")

    def describe(self) -> str:
        """'rate 0/4 -> 1/4, p=1.00, not significant' (or 'significant at alpha 0.05')."""
        verdict = (f"significant at alpha {self.alpha:g}" if self.significant
                   else "not significant")
        return f"{self.rates()}, p={format_p(self.p_value)}, {verdict}"

    def to_json(self) -> dict[str, Any]:
        """The JSON form of this test."""
        return {"test": "fisher-exact-two-sided",
                "before": [self.violating_before, self.trials_before],
                "after": [self.violating_after, self.trials_after],
                "p_value": self.p_value, "alpha": self.alpha,
                "significant": self.significant}


def format_p(p: float) -> str:
    """A p-value in a few characters: two decimals, or two digits below 0.01 (1.1e-05)."""
    return f"{p:.2f}" if p >= 0.01 else f"{p:.1e}"


def _checked(violating: int, trials: int, side: str) -> None:
    if trials < 1 or not 0 <= violating <= trials:
        raise UsageError(f"{side}: violating trials {violating!r} of {trials!r} is no outcome: "
                         f"trials must be at least 1 and violating trials between 0 and trials; "
                         f"pass the finding's violating_trials and trials")


def fisher_exact(violating_before: int, trials_before: int, violating_after: int,
                 trials_after: int, alpha: float = ALPHA) -> RateTest:
    """Two-sided Fisher's exact test of two runs' violating trials (baseline, then run)."""
    _checked(violating_before, trials_before, "baseline")
    _checked(violating_after, trials_after, "run")
    total = trials_before + trials_after
    violating = violating_before + violating_after

    def weight(x: int) -> int:  # tables with x violating baseline trials, out of comb(total, ...)
        return math.comb(violating, x) * math.comb(total - violating, trials_before - x)

    observed = weight(violating_before)
    low, high = max(0, trials_before - (total - violating)), min(violating, trials_before)
    extreme = sum(w for w in map(weight, range(low, high + 1)) if w <= observed)
    p = min(1.0, extreme / math.comb(total, trials_before))
    return RateTest(violating_before, trials_before, violating_after, trials_after, p, alpha)


def least_p(trials_before: int, trials_after: int) -> float:
    """The smallest p-value any outcome of these trial counts can give: that of a flip from
    none of one side's trials to all of the other's (0/4 -> 4/4: 0.029; 0/1 -> 1/1: 1)."""
    return min(fisher_exact(0, trials_before, trials_after, trials_after).p_value,
               fisher_exact(trials_before, trials_before, 0, trials_after).p_value)


def flip_trials(alpha: float = ALPHA) -> int:
    """The fewest trials a side with which a complete flip (0/n -> n/n) is significant: 4."""
    n = 1
    while least_p(n, n) >= alpha:
        n += 1
    return n
