"""More trials for a changed racy cell that too few trials cannot judge, in the same run.

A racy cell (its trials disagreed, or the scheduler left decisions to a thread or a server) is
judged by rate: a change gates only when Fisher's exact test finds it significant. A complete
flip (every trial violated on one side, none on the other) with too few trials for any
outcome to be significant gates by the exception of ``arib.runs.gate_rule``; with two trials a
side, a race violated in 80 % of trials holds in both about once in 25 runs, and the bench
failed on it. Before the gate judges, the bench measures each such cell once more, in the same
run, with the fewest trials that let the test call the same flip significant: a race that is
still there shows violating trials and is judged by rate; a cell that really changed flips in
every trial again and gates, now by the test. The rule is fixed in advance and applied to
every such cell whatever the second measurement shows; the first measurement is kept in the
run's ``remeasured`` record and shown in its report.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from arib.ground.keys import Cell
from arib.runs.compare import CellChange, GateResult, summary
from arib.runs.gate_rule import Basis
from arib.runs.significance import ALPHA, least_p

# The most trials a cell is measured again with: a baseline of one trial needs 20 for a flip
# to be significant (p = 1/21), and a cell's child must end within its check's time limit.
MAX_TRIALS = 20
# The share of the check's time limit the projected second measurement may take.
TIME_SHARE = 0.5


@dataclass(frozen=True)
class Remeasured:
    """A changed cell measured again with more trials before the gate judged it."""

    cell: Cell
    first: str  # the first measurement, in a few words ("held 0/2")
    baseline: str  # the accepted baseline's cell, in a few words ("violated 2/2")
    trials: int  # the second measurement's trials
    second: str  # the second measurement, in a few words ("violated 4/5")
    why: str  # how the gate judged the first measurement

    def describe(self) -> str:
        """One line: the cell, both measurements and why it was measured again."""
        return (f"{self.cell}: measured again with {self.trials} trials: {self.first} -> "
                f"{self.second} (baseline {self.baseline}); the first measurement was "
                f"{self.why}")

    def to_json(self) -> dict[str, Any]:
        """The JSON form kept in the run's ``remeasured`` list."""
        return {"check": self.cell.check_id, "lane": self.cell.lane, "first": self.first,
                "baseline": self.baseline, "trials": self.trials, "second": self.second,
                "why": self.why}


def unjudged_flips(result: GateResult) -> list[CellChange]:
    """The changes that gate only because every trial flipped and too few trials were run
    for Fisher's exact test to judge the flip."""
    return [c for c in result.changes
            if c.judgement is not None and c.judgement.basis is Basis.RACY
            and c.judgement.complete_flip and not c.judgement.test.significant]


def trials_to_judge(baseline_trials: int, trials: int, alpha: float = ALPHA) -> int:
    """The fewest trials (at least ``trials``, at most MAX_TRIALS) with which a complete flip
    against a baseline of ``baseline_trials`` is significant: 5 against 2, 20 against 1."""
    n = max(trials, 1)
    while n < MAX_TRIALS and least_p(baseline_trials, n) >= alpha:
        n += 1
    return n


def affordable_trials(wanted: int, first: Mapping[str, Any], timeout_s: float) -> int:
    """``wanted`` trials, fewer if the first measurement's time per trial projects past
    TIME_SHARE of the check's time limit (never fewer than the first's own trials)."""
    per_trial = float(first["duration_s"]) / max(1, int(first["trials"]))
    if per_trial <= 0:
        return wanted
    return max(int(first["trials"]), min(wanted, int(TIME_SHARE * timeout_s / per_trial)))


# measure(cell, trials) -> the cell's finding (JSON form) measured with that many trials, or
# None when it was not measured (the first measurement stands); it raises KeyboardInterrupt
# when the run was interrupted
Measure = Callable[[Cell, int], Mapping[str, Any] | None]


class RemeasureInterrupted(KeyboardInterrupt):
    """The run was interrupted while cells were measured again; ``done`` says which were."""

    def __init__(self, done: list[Remeasured]) -> None:
        super().__init__()
        self.done = done


def remeasure(result: GateResult, timeouts: Mapping[str, float], trial_params: Mapping[str, str],
              measure: Measure) -> list[Remeasured]:
    """Measure every unjudged flip of ``result`` again (``measure``), with the trials that let
    the test judge it, and say what was done (a cell ``measure`` did not measure is left
    out; an interrupt stops it with RemeasureInterrupted, saying what was done before it).
    ``timeouts`` and ``trial_params`` give each check's time limit and the name of its
    trials parameter (a check without one, or a cell whose time per trial leaves no room for
    more, is left as it was)."""
    done: list[Remeasured] = []
    for change in unjudged_flips(result):
        first, before = change.after, change.before
        if first is None or before is None or change.check not in trial_params:
            continue
        if trial_params[change.check] not in first.get("params", {}):
            continue
        wanted = trials_to_judge(int(before["trials"]), int(first["trials"]) + 1)
        trials = affordable_trials(wanted, first, timeouts[change.check])
        if trials <= int(first["trials"]):
            continue
        try:
            second = measure(change.cell, trials)
        except KeyboardInterrupt:
            raise RemeasureInterrupted(done) from None
        if second is None:
            continue
        assert change.judgement is not None  # unjudged_flips keeps judged changes only
        done.append(Remeasured(change.cell, summary(first), summary(before), trials,
                               summary(second), change.judgement.describe()))
    return done

