"""How the regression gate judges a cell whose violating trials changed: exactly, or by rate.

A cell held or violated on both sides is one of three kinds, judged in this order:

- replayed: both runs scheduled it with every decision controlled (``control``), with the
  same trial seeds and parameters. Each trial replays its schedule, so any change of its
  violating trials is real and gates.
- racy: a side's trials disagreed (violated in some, held in others), a side left schedule
  decisions uncontrolled (a backend's thread, a server), or a side ran unscheduled against a
  server (its ``service_version``): nothing ordered the server's work against the check's, so
  its timing is the machine's (ARIB-LGCANCEL-001 on lg-async-postgres at cp1.0.1 lost a write
  after a cancellation in none of 8 trials on an idle machine, in 4 of 4 beside a CI run, until
  the check pinned psycopg's busy clock). Its
  violating trials are a sample of a rate: a change gates only when Fisher's exact test finds
  the rates different at ``significance.ALPHA``; otherwise it is listed with its p-value and
  both rates. One exception: a complete flip (every trial violated on one side, none on the
  other) where the trial counts are too few for any outcome to be significant (0/3 -> 3/3:
  p=0.10 at best) gates, judged exactly: the test cannot call it chance, and it is the
  strongest evidence those trials can give. (With enough trials a complete flip is
  significant anyway; the bench measures such a cell again with enough trials before it
  judges: arib.runs.remeasure.)
- agreed: every trial of each side agreed, no decision was left uncontrolled and no side ran
  unscheduled against a server. Nothing shows a race, so the cell is taken as deterministic:
  a flip between held and violated gates, even with one trial a side (where no flip could be
  significant); a change of the trial count alone (the rate stays 0 or 1) does not.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from arib.runs.significance import RateTest, fisher_exact, flip_trials, format_p

RATED = ("held", "violated")  # the verdicts whose violating trials measure a rate


class Basis(str, enum.Enum):
    """On what a changed cell is judged."""

    REPLAYED = "replayed"
    RACY = "racy"
    AGREED = "agreed"


@dataclass(frozen=True)
class Judgement:
    """How the gate judged one changed cell, and whether the change fails it."""

    basis: Basis
    test: RateTest
    why: str  # why this basis: what in the two findings made the cell exact or racy

    @property
    def gates(self) -> bool:
        """Whether the change fails the regression gate."""
        if self.basis is Basis.RACY:
            return self.test.significant or self.complete_flip
        before, after = self.test.violating_before, self.test.violating_after
        if self.basis is Basis.REPLAYED:
            return before != after
        return self.test.rate_before != self.test.rate_after

    @property
    def complete_flip(self) -> bool:
        """Every trial violated on one side and none on the other."""
        return {self.test.rate_before, self.test.rate_after} == {0.0, 1.0}

    def describe(self) -> str:
        """The rates and the judgement: 'rate 0/4 -> 1/4, p=1.00, not significant (racy: ...)'."""
        test = self.test
        if self.basis is not Basis.RACY:
            if not self.gates:
                return f"{test.rates()}, the same rate ({self.why})"
            return f"{test.rates()}, judged exactly: {self.why}"
        powerless = ("" if test.can_be_significant else
                     f"with {test.trials_before} and {test.trials_after} trials no change "
                     f"can be significant")
        if self.complete_flip and not test.significant:
            return (f"{test.rates()}, p={format_p(test.p_value)}, judged exactly: every trial "
                    f"changed and {powerless} ({self.why}; {flip_trials()} trials a side "
                    f"would let Fisher's exact test judge it)")
        return f"{test.describe()} ({self.why}{'; ' + powerless if powerless else ''})"

    def to_json(self) -> dict[str, Any]:
        """The JSON form of this judgement."""
        return {"basis": self.basis.value, "why": self.why, "gates": self.gates,
                "rate_test": self.test.to_json()}


def _disagreed(finding: Mapping[str, Any]) -> bool:
    return 0 < finding["violating_trials"] < finding["trials"]


def _uncontrolled(finding: Mapping[str, Any]) -> int:
    """Schedule decisions the finding's trials left uncontrolled (0 when not scheduled)."""
    control = finding.get("control")
    return 0 if control is None else control["decisions"] - control["controlled"]


def _unscheduled_server(finding: Mapping[str, Any]) -> str | None:
    """The version of the server a finding's trials ran against unscheduled; None when it was
    scheduled or no server was involved."""
    if finding.get("control") is not None:
        return None
    return finding.get("service_version") or None


def _replayed(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Both scheduled with every decision controlled, the same trial seeds and parameters."""
    scheduled = a.get("control") is not None and b.get("control") is not None
    return (scheduled and not _uncontrolled(a) and not _uncontrolled(b)
            and list(a["seeds"]) == list(b["seeds"]) and a.get("params") == b.get("params"))


def _racy(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[str]:
    """What shows either side to be a sample of a race, in words; empty when nothing does."""
    reasons = []
    for side, finding in (("baseline", a), ("run", b)):
        if _disagreed(finding):
            reasons.append(f"the {side}'s trials disagreed, {finding['violating_trials']} of "
                           f"{finding['trials']} violated")
        if _uncontrolled(finding):
            reasons.append(f"the {side} left {_uncontrolled(finding)} of "
                           f"{finding['control']['decisions']} schedule decisions uncontrolled")
        server = _unscheduled_server(finding)
        if server:
            reasons.append(f"the {side} ran unscheduled against a server ({server}), whose "
                           f"timing nothing controlled")
    return reasons


def judge(before: Mapping[str, Any], after: Mapping[str, Any]) -> Judgement | None:
    """How a cell whose violating trials (or verdict) changed is judged; None when a side is
    neither held nor violated (an error or an abstention has no rate: any change is real)."""
    if before["verdict"] not in RATED or after["verdict"] not in RATED:
        return None
    test = fisher_exact(before["violating_trials"], before["trials"],
                        after["violating_trials"], after["trials"])
    if _replayed(before, after):
        return Judgement(Basis.REPLAYED, test, "every schedule decision of both runs "
                                               "controlled, the same trial seeds: each trial "
                                               "replays")
    reasons = _racy(before, after)
    if reasons:
        return Judgement(Basis.RACY, test, "racy: " + "; ".join(reasons))
    return Judgement(Basis.AGREED, test, "every trial of each run agreed, no schedule "
                                         "decision uncontrolled, no server unscheduled")
