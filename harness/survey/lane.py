"""What the survey found on one lane: each mutant's status there, coverage, scores, waivers."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from arib.ground.model import CleanBase, MutantResult, MutantStatus
from arib.mutants.base import MutantSpec
from arib.survey.coverage import to_ranges
from arib.survey.scores import LANE_WIDE, Scores
from arib.survey.survivors import UNKILLED as UNKILLED_VALUES
from arib.survey.survivors import Entry, disagreements

S = MutantStatus
# Statuses of a mutant that the suite does not kill, and that the survivors file must list.
UNKILLED = tuple(S(value) for value in UNKILLED_VALUES)


def status_under(status: MutantStatus, checks: Mapping[str, MutantStatus],
                 check: str) -> MutantStatus:
    """A mutant's status in one check's scores: its pair's, or its lane-wide status."""
    if status in LANE_WIDE or check not in checks:
        return status
    return checks[check]


@dataclass(frozen=True)
class MutantOutcome:
    """One generated mutant on one lane: its status there, why, and the lines it changes."""

    mutant: MutantSpec
    status: MutantStatus
    reason: str
    lines: frozenset[int] | None  # None: its change could not be mapped to lines
    checks: Mapping[str, MutantStatus]  # its status under each check applicable there
    waiver: Entry | None = None  # its line in the survivors file, if any

    def to_json(self) -> dict[str, Any]:
        """The JSON form of this mutant's outcome on the lane."""
        m = self.mutant
        return {
            "id": m.id,
            "operator": m.operator,
            "qualname": m.qualname,
            "status": self.status.value,
            "reason": self.reason,
            "lines": None if self.lines is None else to_ranges(self.lines),
            "unmapped": self.lines is None,
            "checks": {c: s.value for c, s in sorted(self.checks.items())},
            "survivors_file": self.waiver.to_json() if self.waiver else None,
        }


@dataclass(frozen=True)
class LaneSurvey:
    """The survey of one lane: every mutant's status, the clean bases, coverage and runs."""

    lane: str
    module: str
    file: str
    outcomes: tuple[MutantOutcome, ...]
    dropped_noncompiling: int
    clean: Mapping[str, CleanBase]
    coverage: Mapping[str, frozenset[int]]
    executable: frozenset[int]
    results: tuple[MutantResult, ...]  # the (check, mutant) pairs that ran, or were cached
    runs: Mapping[str, int]  # how many pair runs ran, were cached or were saved, and why
    error: str | None = None  # why the lane could not be surveyed
    survivors_file: tuple[Entry, ...] = ()
    order: tuple[str, ...] = ()  # a shard's: every generated mutant id of the lane, in order
    # its error is bad input: a user's lane whose store class cannot be found or mutated
    bad_input: bool = False

    @property
    def mutants(self) -> tuple[MutantSpec, ...]:
        """Every generated mutant surveyed on this lane."""
        return tuple(o.mutant for o in self.outcomes)

    def checks(self) -> tuple[str, ...]:
        """The checks applicable on this lane (every check whose clean base did not abstain)."""
        return tuple(sorted(c for c, base in self.clean.items() if not base.abstains))

    def outcome(self, mutant_id: str) -> MutantOutcome | None:
        """The outcome of one mutant by id, or None when it was not surveyed here."""
        return next((o for o in self.outcomes if o.mutant.id == mutant_id), None)

    def killed_by(self, mutant_id: str) -> tuple[str, ...]:
        """The checks that killed one mutant, sorted."""
        found = self.outcome(mutant_id)
        return tuple(c for c, s in sorted(found.checks.items()) if s is S.KILLED) if found \
            else ()

    def scores(self) -> Scores:
        """The lane's scores over every generated mutant."""
        return Scores.of([o.status for o in self.outcomes])

    def check_scores(self) -> dict[str, Scores]:
        """Per applicable check: its scores over every mutant (lane-wide statuses count too)."""
        return {c: Scores.of([status_under(o.status, o.checks, c) for o in self.outcomes])
                for c in self.checks()}

    def survivors(self) -> tuple[MutantOutcome, ...]:
        """The mutants no check kills (and not set aside as equivalent, duplicate or n/a)."""
        return tuple(o for o in self.outcomes if o.status in UNKILLED)

    def unmapped(self) -> tuple[MutantOutcome, ...]:
        """Outcomes of mutants whose source lines could not be located in the module."""
        return tuple(o for o in self.outcomes if o.lines is None)

    def survivors_problems(self) -> tuple[str, ...]:
        """Where the survivors file and this survey disagree, one line each naming the id."""
        return disagreements(self.lane, self.survivors_file, {
            o.mutant.id: (o.status.value, o.waiver is not None and o.status is S.EQUIVALENT)
            for o in self.outcomes})

    def to_json(self) -> dict[str, Any]:
        """The JSON form of this lane's survey."""
        return {
            "lane": self.lane,
            "module": self.module,
            "file": self.file,
            "status": "error" if self.error else "ok",
            "error": self.error,
            "bad_input": self.bad_input,
            "mutants": len(self.outcomes),
            "dropped_noncompiling": self.dropped_noncompiling,
            "scores": self.scores().to_json(),
            "checks": {c: s.to_json() for c, s in self.check_scores().items()},
            "clean": {c: base.to_json() for c, base in sorted(self.clean.items())},
            "runs": dict(self.runs),
            "coverage": {
                "executable": to_ranges(self.executable),
                "checks": {c: to_ranges(lines) for c, lines in sorted(self.coverage.items())},
                "unmapped": [o.mutant.id for o in self.unmapped()],
            },
            "outcomes": [o.to_json() for o in self.outcomes],
            "results": [r.to_json() for r in self.results],
            "survivors": [{**o.to_json(), "description": o.mutant.description,
                           "diff": o.mutant.diff()} for o in self.survivors()],
            "survivors_file": {"entries": [e.to_json() for e in self.survivors_file],
                               "problems": list(self.survivors_problems())},
        }
