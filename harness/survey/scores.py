"""The survey's numbers: a mutant's status on a lane, scores per lane and check, the gate.

How each number is computed (harness/README.md's survey section says the same):

- A pair (check, mutant) on a lane is ``killed``, ``survived``, ``flaky``, ``timeout`` or
  ``error`` when it was run (``arib.ground.model.mutant_status`` over the reruns); it is
  ``no_coverage`` when the check's clean runs never executed the mutant's lines, and
  ``not_judgeable`` when the check's clean base was not ``held`` in every rerun, and
  ``not_run`` when another check had already killed the mutant there (the survey stops a
  mutant at its first kill unless asked for every check); none of these is run.
- A mutant's status on a lane: ``equivalent``, ``duplicate`` or ``not_applicable`` when the
  compiler or the lane's verified claims say so (not run); else ``killed`` when any check
  killed it; else, of the pairs that were run, ``timeout`` before ``flaky`` before
  ``survived`` before ``error``; else ``not_judgeable`` when a check that reaches it is not
  judgeable there; else ``no_coverage``. An ``equivalent`` entry of the survivors file turns
  any status but ``killed`` into ``equivalent``.
- Score of all mutants = killed / (mutants - equivalent - duplicate - not_applicable).
- Covered score = killed / (killed + survived + flaky + timeout): over the covered,
  non-equivalent, non-duplicate mutants that were judged (DESIGN.md).
- Per check, the same over that check's pairs (a lane-wide status counts for every check).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from arib.ground.errors import UsageError
from arib.ground.model import MutantStatus

S = MutantStatus
# The order statuses are listed in, everywhere.
ORDER = (S.KILLED, S.SURVIVED, S.FLAKY, S.TIMEOUT, S.ERROR, S.NO_COVERAGE, S.EQUIVALENT,
         S.DUPLICATE, S.NOT_APPLICABLE, S.NOT_JUDGEABLE, S.NOT_RUN)
# Statuses decided for the whole lane before any check runs.
LANE_WIDE = (S.EQUIVALENT, S.DUPLICATE, S.NOT_APPLICABLE)
# Of the pairs that were run, which status a mutant takes first (a kill beats everything).
_RUN_PRECEDENCE = (S.TIMEOUT, S.FLAKY, S.SURVIVED, S.ERROR)


def lane_status(pairs: Iterable[MutantStatus]) -> MutantStatus:
    """A mutant's status on a lane from its status under each check applicable there."""
    seen = set(pairs)
    if S.KILLED in seen:
        return S.KILLED
    for status in _RUN_PRECEDENCE:
        if status in seen:
            return status
    if S.NOT_JUDGEABLE in seen:
        return S.NOT_JUDGEABLE
    return S.NO_COVERAGE


def _ratio(part: int, whole: int) -> float | None:
    return part / whole if whole else None


@dataclass(frozen=True)
class Scores:
    """How many mutants of a lane (or of one check on it) got each status, and the scores."""

    mutants: int
    counts: Mapping[MutantStatus, int] = field(default_factory=dict)

    @classmethod
    def of(cls, statuses: Sequence[MutantStatus]) -> Scores:
        """Scores of one status per mutant."""
        tally = Counter(statuses)
        return cls(len(statuses), {s: tally.get(s, 0) for s in ORDER})

    def count(self, status: MutantStatus) -> int:
        """How many mutants have ``status``."""
        return self.counts.get(status, 0)

    @property
    def score_all(self) -> float | None:
        """killed / (mutants - equivalent - duplicate - not_applicable); None: nothing to score."""
        ignored = sum(self.count(s) for s in LANE_WIDE)
        return _ratio(self.count(S.KILLED), self.mutants - ignored)

    @property
    def covered(self) -> int:
        """The covered, non-equivalent, non-duplicate mutants that were judged."""
        return sum(self.count(s) for s in (S.KILLED, S.SURVIVED, S.FLAKY, S.TIMEOUT))

    @property
    def score_covered(self) -> float | None:
        """killed / (killed + survived + flaky + timeout); None when none was judged."""
        return _ratio(self.count(S.KILLED), self.covered)

    def to_json(self) -> dict[str, Any]:
        """The JSON form of these scores."""
        return {
            "mutants": self.mutants,
            **{s.value: self.count(s) for s in ORDER},
            "score_all": None if self.score_all is None else round(self.score_all, 4),
            "score_covered": None if self.score_covered is None else round(
                self.score_covered, 4),
        }

    def describe(self) -> str:
        """One line: the scores, then every non-zero count."""
        def pct(value: float | None) -> str:
            return "n/a" if value is None else f"{100 * value:.1f}%"

        counts = ", ".join(f"{s.value} {self.count(s)}" for s in ORDER if self.count(s))
        return (f"score {pct(self.score_all)} of all, {pct(self.score_covered)} of covered "
                f"({self.mutants} mutants: {counts or 'none'})")


# ------------------------------------------------------------------------------ the gate


@dataclass(frozen=True)
class FailUnder:
    """``--fail-under``: the least covered score (percent) per lane; None: no gate."""

    default: float | None = None
    lanes: Mapping[str, float] = field(default_factory=dict)

    def threshold(self, lane: str) -> float | None:
        """The lane's own threshold, else the default one (None: no gate)."""
        return self.lanes.get(lane, self.default)

    def to_json(self) -> dict[str, Any]:
        """The JSON form of these thresholds."""
        return {"default": self.default, "lanes": dict(sorted(self.lanes.items()))}


def _percent(text: str, value: str) -> float:
    try:
        pct = float(value)
    except ValueError:
        pct = -1.0
    if not 0.0 <= pct <= 100.0:
        raise UsageError(
            f"malformed --fail-under {text!r}: {value!r} is not a percentage from 0 to 100; "
            f"the form is PCT (every lane) or LANE=PCT, e.g. --fail-under 90 "
            f"--fail-under redis-from-url=80")
    return pct


def parse_fail_under(values: Sequence[str], known_lanes: Iterable[str]) -> FailUnder:
    """``["90", "redis-from-url=80"]`` -> FailUnder; a malformed value or lane is an error."""
    known = set(known_lanes)
    default: float | None = None
    lanes: dict[str, float] = {}
    for text in values:
        lane, sep, value = text.rpartition("=")
        if not sep:
            if default is not None:
                raise UsageError(f"--fail-under {text!r}: the default threshold is given twice "
                                 f"({default:g} and {value}); give it once")
            default = _percent(text, value)
            continue
        if lane not in known:
            raise UsageError(f"--fail-under {text!r}: unknown lane {lane!r}; use one of: "
                             f"{', '.join(sorted(known))}")
        if lane in lanes:
            raise UsageError(f"--fail-under {text!r}: lane {lane!r} is given twice; give it "
                             f"once")
        lanes[lane] = _percent(text, value)
    return FailUnder(default, lanes)


@dataclass(frozen=True)
class GateLine:
    """The gate's finding for one lane."""

    lane: str
    threshold: float
    score: float | None
    error: str | None = None

    @property
    def passed(self) -> bool:
        """True when the lane was judged and its covered score reaches the threshold."""
        return self.error is None and self.score is not None and (
            100 * self.score >= self.threshold)

    def describe(self) -> str:
        """One line: the lane, its covered score, the threshold and ok or BELOW."""
        got = self.error or ("nothing judged: no covered score" if self.score is None
                             else f"covered score {100 * self.score:.1f}%")
        verdict = "ok" if self.passed else "BELOW"
        return f"{self.lane}: {got}, threshold {self.threshold:g}%: {verdict}"


def gate(scores: Mapping[str, Scores], errors: Mapping[str, str],
         fail_under: FailUnder) -> tuple[GateLine, ...]:
    """One line per measured lane that has a threshold."""
    lines = []
    for lane in sorted({*scores, *errors}):
        threshold = fail_under.threshold(lane)
        if threshold is None:
            continue
        score = scores[lane].score_covered if lane in scores else None
        lines.append(GateLine(lane, threshold, score, errors.get(lane)))
    return tuple(lines)
