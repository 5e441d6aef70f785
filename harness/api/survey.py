"""Mutate your own store: ``survey_store(factory) -> StoreSurvey``, what the checks can see.

The survey generates mutants of the class the factory returns (``arib.survey.user``), runs the
checks against each, and says which changes of the store's code the checks notice (killed)
and which they do not (survived: a defect of that kind would pass ``validate()``). The score
is the share of covered mutants killed (``arib.survey.scores``), the same figure as
``python -m arib survey`` prints for the lane.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from arib.api.lane import Factory, Lane, as_lane
from arib.api.run import select_checks
from arib.ground.errors import UsageError
from arib.survey.lane import LaneSurvey
from arib.survey.scores import GateLine, Scores


@dataclass(frozen=True)
class StoreSurvey:
    """The survey of one user's store, and the score it must reach (percent, or None).
    ``survey`` is the store class's; ``also`` one per class the lane names to mutate
    (``@lane(mutate=...)``); the score counts them all."""

    survey: LaneSurvey
    fail_under: float | None = None
    also: tuple[LaneSurvey, ...] = ()

    @property
    def surveys(self) -> tuple[LaneSurvey, ...]:
        """The store class's survey, then the named classes'."""
        return (self.survey, *self.also)

    @property
    def error(self) -> str | None:
        """The first lane error of the surveys, or None."""
        return next((s.error for s in self.surveys if s.error), None)

    @property
    def score(self) -> float | None:
        """The covered score (killed of the mutants some check executes) over every surveyed
        class, 0..1; None when no mutant was judged."""
        return Scores.of([o.status for s in self.surveys for o in s.outcomes]).score_covered

    def gate(self) -> GateLine | None:
        """The score gate's line (``python -m arib survey --fail-under``'s rule), or None."""
        return None if self.fail_under is None else GateLine(
            self.survey.lane, self.fail_under, self.score, self.error)

    @property
    def passed(self) -> bool:
        """Surveyed without error, some mutant judged, and the score reaches ``fail_under``."""
        line = self.gate()
        return (self.error is None and self.score is not None
                and (line is None or line.passed))

    def __str__(self) -> str:
        from arib.survey.report import render_text

        line = self.gate()
        return render_text(self.surveys, show_diffs=10) + (
            f"\ngate: {line.describe()}" if line is not None else "")

    def to_json(self) -> dict[str, Any]:
        """The lane's survey JSON (and the named classes' under ``also``), with the threshold
        and whether it passed."""
        return {**self.survey.to_json(), "also": [s.to_json() for s in self.also],
                "fail_under": self.fail_under, "passed": self.passed}


def survey_store(factory: Lane | Factory, *, checks: Iterable[str] | str | None = None,
                 fail_under: float | None = None, seed: int = 0, reruns: int = 1,
                 timeout_s: float = 10.0, workers: int | None = None,
                 params: Mapping[str, Mapping[str, int]] | None = None) -> StoreSurvey:
    """Survey the store ``factory`` makes under ``checks`` (default: ``DEFAULT_CHECKS``)."""
    from arib.caches.verdicts import AdmissionCache
    from arib.survey.engine import SurveyConfig, survey

    if fail_under is not None and not 0 <= fail_under <= 100:
        raise UsageError(f"fail_under={fail_under!r}: the rule: a percentage from 0 to 100; "
                         f"fix: e.g. fail_under=80")
    user = as_lane(factory)
    config = SurveyConfig(lanes=(user.spec(),), checks=select_checks(checks), reruns=reruns,
                          workers=workers or os.cpu_count() or 1,
                          params={k: dict(v) for k, v in (params or {}).items()},
                          timeout_s=timeout_s, run_seed=seed, quiet=True,
                          cache=AdmissionCache(None))
    found, *also = survey(config)
    return StoreSurvey(found, fail_under, tuple(also))
