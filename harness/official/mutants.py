"""The official suite against our checks on the same generated mutants of the savers.

One survey (``arib.survey.engine``: the same generation, compiler sorting, coverage selection,
forked children and time limits) judges every generated mutant of each lane with our checks
and with the official suite as one more "check" (its ``OfficialSuite.check``).
Each mutant the survey judged (not set aside as equivalent, duplicate or not applicable) is
then killed by both, only by ours, only by the official suite, or by neither.
"""

from __future__ import annotations

import enum
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from arib.checks.base import CheckSpec
from arib.ground.model import MutantStatus
from arib.ground.official import OfficialSuite
from arib.mutants.base import MutantSpec
from arib.official.suite import active_suite
from arib.survey.lane import LaneSurvey
from arib.survey.scores import LANE_WIDE

S = MutantStatus


class Side(str, enum.Enum):
    """Who kills a mutant."""

    BOTH = "both"
    OURS = "ours_only"
    OFFICIAL = "official_only"
    NEITHER = "neither"


SIDE_TITLES = {Side.BOTH: "killed by both", Side.OURS: "only ours kill",
               Side.OFFICIAL: "only the official suite kills", Side.NEITHER: "neither kills"}


@dataclass(frozen=True)
class MutantSides:
    """One judged mutant on one lane: its status under our checks and under the suite."""

    lane: str
    mutant: MutantSpec
    ours: Mapping[str, MutantStatus]  # our check id -> its status on the mutant
    official: MutantStatus | None  # None: the suite is not applicable on the lane
    # check id (ours or the suite's) -> its rate of violated reruns where it is flaky ("1/3"):
    # a kill that did not repeat in every rerun, so not counted as one
    rates: Mapping[str, str] = field(default_factory=dict)

    def shown(self, check: str, status: MutantStatus | None) -> str:
        """``status`` of ``check`` on this mutant, with its rate where it is flaky."""
        if status is None:
            return "n/a"
        rate = self.rates.get(check)
        return f"{status.value} {rate}" if rate else status.value

    @property
    def ours_kill(self) -> bool:
        """Whether any of our checks killed it."""
        return any(s is S.KILLED for s in self.ours.values())

    @property
    def official_kills(self) -> bool:
        """Whether the official suite killed it."""
        return self.official is S.KILLED

    @property
    def side(self) -> Side:
        """Who kills it."""
        return {(True, True): Side.BOTH, (True, False): Side.OURS,
                (False, True): Side.OFFICIAL, (False, False): Side.NEITHER}[
            (self.ours_kill, self.official_kills)]

    def to_json(self) -> dict[str, Any]:
        """The JSON form of this mutant's comparison, with its diff."""
        m = self.mutant
        return {"id": m.id, "lane": self.lane, "operator": m.operator, "qualname": m.qualname,
                "description": m.description, "side": self.side.value,
                "ours": {c: s.value for c, s in sorted(self.ours.items())},
                "official": None if self.official is None else self.official.value,
                "flaky_rates": dict(sorted(self.rates.items())), "diff": m.diff()}


def _score(killed: int, whole: int) -> float | None:
    return round(killed / whole, 4) if whole else None


@dataclass(frozen=True)
class LaneSides:
    """The comparison on one lane: every judged mutant, and those set aside, by status."""

    lane: str
    mutants: int  # every generated mutant of the lane
    set_aside: Mapping[str, int]  # equivalent / duplicate / not_applicable: not compared
    rows: tuple[MutantSides, ...]
    clean: Mapping[str, str]  # check id -> its clean base on the lane, described
    error: str | None = None  # why the lane could not be surveyed
    # Per side ("official", "ours"): whether any of its checks held on every clean rerun
    # here; a side that judges nothing on a lane has no score there (not 0%).
    judges: Mapping[str, bool] = field(default_factory=lambda: {"official": True,
                                                                "ours": True})
    ids: tuple[str, ...] = ()  # every generated mutant of the lane, judged or set aside

    @property
    def comparable(self) -> bool:
        """Whether both sides judged this lane's mutants (so that its counts compare)."""
        return self.error is None and all(self.judges.values())

    def counts(self) -> dict[Side, int]:
        """How many judged mutants each side kills (every side listed, zeros too)."""
        found = Counter(r.side for r in self.rows)
        return {side: found.get(side, 0) for side in Side}

    def scores(self) -> dict[str, float | None]:
        """Mutation score of the official suite and of ours over the same judged mutants."""
        n = len(self.rows)
        return {"official": _score(sum(r.official_kills for r in self.rows), n)
                if self.judges["official"] else None,
                "ours": _score(sum(r.ours_kill for r in self.rows), n)
                if self.judges["ours"] else None,
                "union": _score(sum(r.ours_kill or r.official_kills for r in self.rows), n)
                if self.comparable else None}

    def statuses(self) -> dict[str, dict[str, int]]:
        """How the judged mutants came out under the suite and under ours (best of our
        checks), status by status: a mutant nobody reaches is no_coverage, not survived."""
        from arib.survey.scores import lane_status

        official = Counter("not_applicable" if r.official is None else r.official.value
                           for r in self.rows)
        ours = Counter(lane_status(r.ours.values()).value for r in self.rows)
        return {"official": dict(sorted(official.items())), "ours": dict(sorted(ours.items()))}

    def to_json(self) -> dict[str, Any]:
        """The JSON form of the lane's comparison."""
        return {"lane": self.lane, "error": self.error, "mutants": self.mutants,
                "mutant_ids": list(self.ids), "judged": len(self.rows),
                "set_aside": dict(self.set_aside),
                "counts": {s.value: n for s, n in self.counts().items()},
                "scores": self.scores(), "statuses": self.statuses(),
                "judges": dict(self.judges), "comparable": self.comparable,
                "clean": dict(self.clean), "rows": [r.to_json() for r in self.rows]}


def lane_sides(survey: LaneSurvey) -> LaneSides:
    """The comparison on one lane from its survey (with the official check among its checks)."""
    official_id = active_suite()[1].check_id
    clean = {c: base.describe() for c, base in sorted(survey.clean.items())}
    ids = tuple(o.mutant.id for o in survey.outcomes)
    if survey.error is not None:
        return LaneSides(survey.lane, len(survey.outcomes), {}, (), clean, survey.error,
                         ids=ids)
    aside: Counter[str] = Counter()
    rows = []
    rates = {(r.check_id, r.mutant_id): r.rate for r in survey.results
             if r.status is S.FLAKY}
    for outcome in survey.outcomes:
        if outcome.status in LANE_WIDE:
            aside[outcome.status.value] += 1
            continue
        ours = {c: s for c, s in outcome.checks.items() if c != official_id}
        rows.append(MutantSides(survey.lane, outcome.mutant, ours,
                                outcome.checks.get(official_id),
                                {c: rate for (c, m), rate in rates.items()
                                 if m == outcome.mutant.id}))
    judges = {"official": any(b.judgeable for c, b in survey.clean.items() if c == official_id),
              "ours": any(b.judgeable for c, b in survey.clean.items() if c != official_id)}
    return LaneSides(survey.lane, len(survey.outcomes), dict(sorted(aside.items())),
                     tuple(rows), clean, None, judges, ids)


@dataclass(frozen=True)
class MutantComparison:
    """The official suite against our checks on the same mutants, every lane, one version."""

    family: str  # the family's name
    suite: OfficialSuite  # the family's official suite (arib.official.suite.active_suite)
    version: str
    suite_version: str
    our_checks: tuple[str, ...]
    lanes: tuple[LaneSides, ...]
    settings: Mapping[str, Any]  # how the survey ran (seed, reruns, time limits, ...)
    not_measured: Mapping[str, str]
    duration_s: float

    def totals(self) -> dict[str, Any]:
        """The counts and scores over the lanes where both sides judged mutants; the other
        lanes are named, never counted as 0%."""
        kept = [lane for lane in self.lanes if lane.comparable]
        rows = [r for lane in kept for r in lane.rows]
        whole = LaneSides("all", sum(lane.mutants for lane in kept), {}, tuple(rows), {})
        return {"judged": len(rows), "lanes": [lane.lane for lane in kept],
                "left_out": [lane.lane for lane in self.lanes if not lane.comparable],
                "counts": {s.value: n for s, n in whole.counts().items()},
                "scores": whole.scores()}

    def to_json(self) -> dict[str, Any]:
        """The JSON form of the comparison."""
        return {"kind": "arib-official-mutants", "version": self.version,
                "suite": self.suite.name, "suite_version": self.suite_version,
                "our_checks": list(self.our_checks), "official_check": self.suite.check_id,
                "settings": dict(self.settings),
                "totals": self.totals(), "lanes": [lane.to_json() for lane in self.lanes],
                "not_measured": dict(self.not_measured),
                "duration_s": round(self.duration_s, 3)}

    def markdown(self, examples: int = 3) -> str:
        """The score table, then a few mutants of each one-sided kind with their diffs."""
        lines = [f"# {self.suite.name} {self.suite_version} against our checks on the same "
                 f"mutants, {self.family} {self.version}", "",
                 f"Our checks: {', '.join(self.our_checks) or 'none'}. The official suite "
                 f"kills a mutant when a test that passes on the clean saver fails. A kill "
                 f"counts only when it repeats: violated in every rerun, "
                 f"{self.settings.get('kill_reruns', 1)} at least; one violated in some "
                 f"reruns only is flaky, with its rate, and not a kill. Score = "
                 f"killed / judged (mutants not set aside as equivalent, duplicate or not "
                 f"applicable; a mutant a side never reaches counts as not killed by it).", "",
                 "| lane | mutants | judged | both | only ours | only official | neither "
                 "| official score | our score |", "|---|---|---|---|---|---|---|---|---|"]
        for lane in self.lanes:
            if lane.error:
                lines.append(f"| {lane.lane} | {lane.mutants} | error: {lane.error} |||||||")
                continue
            c, s = lane.counts(), lane.scores()
            lines.append(f"| {lane.lane} | {lane.mutants} | {len(lane.rows)} | {c[Side.BOTH]} "
                         f"| {c[Side.OURS]} | {c[Side.OFFICIAL]} | {c[Side.NEITHER]} | "
                         f"{_pct(s['official'], lane.judges['official'])} | "
                         f"{_pct(s['ours'], lane.judges['ours'])} |")
        t = self.totals()
        what = "**all**" + (f" (without {', '.join(t['left_out'])}: a side judges nothing "
                            f"there)" if t["left_out"] else "")
        lines.append(f"| {what} | | {t['judged']} | {t['counts']['both']} | "
                     f"{t['counts']['ours_only']} | {t['counts']['official_only']} | "
                     f"{t['counts']['neither']} | {_pct(t['scores']['official'])} | "
                     f"{_pct(t['scores']['ours'])} |")
        for name, why in sorted(self.not_measured.items()):
            lines.append(f"| {name} | {why} ||||||||")
        lines += ["", "Statuses of the judged mutants (ours: the best of our checks; "
                      "no_coverage: the side never executes the changed lines):", ""]
        lines += [f"- {lane.lane}: official " + _counts(lane.statuses()["official"])
                  + "; ours " + _counts(lane.statuses()["ours"])
                  for lane in self.lanes if not lane.error]
        lines += ["", "Clean bases (a check not held on every clean rerun judges nothing "
                      "there):", ""]
        lines += [f"- {lane.lane}: " + "; ".join(f"{c} {d}" for c, d in lane.clean.items())
                  for lane in self.lanes]
        for side in (Side.OURS, Side.OFFICIAL, Side.NEITHER):
            lines += self._examples(side, examples)
        return "\n".join(lines) + "\n"

    def _examples(self, side: Side, count: int) -> list[str]:
        """The mutants only ``side`` kills (or neither), then the diffs of up to ``count``."""
        rows = [r for lane in self.lanes for r in lane.rows if r.side is side]
        lines = ["", f"## {SIDE_TITLES[side]}: {len(rows)} mutants", ""]
        if not rows:
            return lines + ["none"]
        lines += [f"- `{r.mutant.id}` {r.lane} {r.mutant.operator} `{r.mutant.qualname}`: "
                  f"ours {_states(r)}, official {r.shown(self.suite.check_id, r.official)}"
                  for r in rows]
        for r in _spread(rows, count):
            lines += ["", f"`python -m arib --family {self.family} show {r.mutant.id} --lane "
                          f"{r.lane}`: {r.mutant.description}", "", "```diff",
                      r.mutant.diff().rstrip(), "```"]
        return lines


def _counts(counts: Mapping[str, int]) -> str:
    return ", ".join(f"{status} {n}" for status, n in counts.items()) or "none"


def _pct(value: float | None, judges: bool = True) -> str:
    return "not judgeable" if not judges else "-" if value is None else f"{100 * value:.1f}%"


def _states(row: MutantSides) -> str:
    return ", ".join(f"{c} {row.shown(c, s)}" for c, s in sorted(row.ours.items())) or \
        "no check"


def _spread(rows: Sequence[MutantSides], count: int) -> list[MutantSides]:
    """Up to ``count`` rows, one per (lane, operator) first, in their order."""
    chosen: list[MutantSides] = []
    seen: set[tuple[str, str]] = set()
    for r in rows:
        if len(chosen) < count and (r.lane, r.mutant.operator) not in seen:
            chosen.append(r)
            seen.add((r.lane, r.mutant.operator))
    for r in rows:
        if len(chosen) < count and r not in chosen:
            chosen.append(r)
    return chosen


def survey_with_official(lanes: Sequence[Any], ours: Sequence[CheckSpec],
                         baseline: Mapping[str, frozenset[str]], **config: Any
                         ) -> tuple[LaneSurvey, ...]:
    """The survey of ``lanes`` with ``ours`` and the official suite as checks; ``config``:
    the other fields of ``arib.survey.engine.SurveyConfig`` (reruns, workers, timeout_s, ...)."""
    from arib.survey.engine import SurveyConfig, survey

    official = active_suite()[1].check(baseline, config.get("timeout_s", 10.0))
    # Every pair runs: who kills a mutant (ours, the official suite, both) is the comparison,
    # so no side may be skipped because the other killed first.
    config = {**config, "first_kill": False}
    return survey(SurveyConfig(lanes=tuple(lanes), checks=(*ours, official), **config))
