"""``python -m arib results``: the mutants a written survey left alive, per lane (like
``mutmut results``).

A survey written with ``survey --write`` keeps one JSON file per lane in its folder, each with
the status of every mutant. This module finds the newest such folder, reads the lane files and
lists the mutants whose status is asked for (by default ``survived`` and ``no_coverage``: what
the checks cannot see), with where each one is and the command that shows its diff.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from arib.ground.errors import ResultsError, UsageError

SURVEY_KIND = "arib-survey"
DEFAULT_STATUSES = ("survived", "no_coverage")
# Every status a survey gives a mutant (DESIGN.md, "The status of a mutant").
STATUSES = ("killed", "survived", "flaky", "timeout", "error", "equivalent", "duplicate",
            "no_coverage", "not_applicable", "not_judgeable")


@dataclass(frozen=True)
class Listed:
    """One mutant of the listing: its id, status and where it is."""

    mutant_id: str
    status: str
    operator: str
    qualname: str
    lines: str
    reason: str

    def to_json(self) -> dict[str, str]:
        """The JSON form of this entry."""
        return {"id": self.mutant_id, "status": self.status, "operator": self.operator,
                "qualname": self.qualname, "lines": self.lines, "reason": self.reason}


@dataclass(frozen=True)
class LaneListing:
    """The listed mutants of one lane, with the lane's totals."""

    lane: str
    total: int  # every mutant of the lane's survey
    scores: Mapping[str, Any]
    listed: tuple[Listed, ...]

    def to_json(self) -> dict[str, Any]:
        """The JSON form of this lane's listing."""
        return {"lane": self.lane, "mutants": self.total, "scores": dict(self.scores),
                "listed": [m.to_json() for m in self.listed]}


def parse_statuses(text: str | None) -> tuple[str, ...]:
    """The statuses of ``--status A,B`` (default survived and no_coverage); an unknown one is
    refused naming it."""
    if not text:
        return DEFAULT_STATUSES
    asked = tuple(s.strip() for s in text.split(",") if s.strip())
    for status in asked:
        if status not in STATUSES:
            raise UsageError(f"unknown mutant status {status!r}: the rule: --status takes "
                             f"comma-separated statuses among {', '.join(STATUSES)}; fix the "
                             f"name")
    return asked or DEFAULT_STATUSES


def lane_files(folder: Path) -> list[Path]:
    """The survey lane files of ``folder`` (not its mutation report or shard manifests)."""
    found = []
    for path in sorted(folder.glob("*.json")):
        try:
            kind = json.loads(path.read_text()).get("kind")
        except (OSError, ValueError, AttributeError):
            continue
        if kind == SURVEY_KIND:
            found.append(path)
    return found


def newest_survey(root: Path, preferred: Path) -> Path:
    """The survey folder to list: ``preferred`` (this version's) when it holds lane files,
    else the folder under ``root`` whose lane files were written last."""
    if lane_files(preferred):
        return preferred
    folders = [p for p in root.glob("*") if p.is_dir() and lane_files(p)] if root.is_dir() else []
    if not folders:
        raise ResultsError(f"no written survey in {str(preferred)!r} nor under {str(root)!r}: "
                           f"the rule: `results` lists what `python -m arib survey --write` "
                           f"wrote; fix: run it, or name a folder with --survey DIR")
    return max(folders, key=lambda p: max(f.stat().st_mtime for f in lane_files(p)))


def _entry(outcome: Mapping[str, Any]) -> Listed:
    return Listed(mutant_id=str(outcome["id"]), status=str(outcome["status"]),
                  operator=str(outcome.get("operator", "")),
                  qualname=str(outcome.get("qualname", "")),
                  lines=str(outcome.get("lines") or ""), reason=str(outcome.get("reason") or ""))


def list_lane(path: Path, statuses: Sequence[str]) -> LaneListing:
    """The mutants of one survey lane file whose status is among ``statuses``, ordered by
    status (in the order asked), then where they are."""
    try:
        document = json.loads(path.read_text())
        outcomes = document["outcomes"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ResultsError(f"survey lane file {str(path)!r} cannot be read ({exc!r}): the rule: "
                           f"a lane file of `survey --write` has its outcomes; fix: write the "
                           f"survey again") from exc
    rank = {status: i for i, status in enumerate(statuses)}
    chosen = [_entry(o) for o in outcomes if o.get("status") in rank]
    chosen.sort(key=lambda m: (rank[m.status], m.qualname, m.lines, m.mutant_id))
    return LaneListing(lane=str(document.get("lane", path.stem)), total=len(outcomes),
                       scores=dict(document.get("scores") or {}), listed=tuple(chosen))


def list_survey(folder: Path, statuses: Sequence[str],
                lanes: Iterable[str] | None = None) -> list[LaneListing]:
    """Every lane's listing in ``folder`` (only ``lanes`` when given; one not surveyed there
    is refused naming the lanes that were)."""
    files = {path.stem: path for path in lane_files(folder)}
    if not files:
        raise ResultsError(f"no survey lane file in {str(folder)!r}: the rule: `results` lists "
                           f"what `python -m arib survey --write` wrote there; fix: name the "
                           f"folder it wrote (--survey DIR), or run it")
    wanted = list(lanes) if lanes else sorted(files)
    unknown = [lane for lane in wanted if lane not in files]
    if unknown:
        raise UsageError(f"lane {unknown[0]!r} has no survey in {str(folder)!r}: the rule: "
                         f"--lane names a surveyed lane ({', '.join(sorted(files))}); fix the "
                         f"name, or survey it with `python -m arib survey --lanes {unknown[0]} "
                         f"--write --partial`")
    return [list_lane(files[lane], statuses) for lane in wanted]


def _score(scores: Mapping[str, Any]) -> str:
    covered = scores.get("score_covered")
    return f"; covered score {covered:.1%}" if isinstance(covered, (int, float)) else ""


def _first_lines(lines: str) -> str:
    """The first span of a mutant's changed lines, with how many more spans there are."""
    spans = lines.split(",")
    return spans[0] + (f" (+{len(spans) - 1} more)" if len(spans) > 1 else "")


def render_listing(folder: Path, listings: Sequence[LaneListing], statuses: Sequence[str]) -> str:
    """What ``results`` prints: per lane its counts of the statuses asked for, then one line
    per mutant (id, status, where, operator), and how to see a diff."""
    lines = [f"survey: {folder} ({len(listings)} lane{'' if len(listings) == 1 else 's'}; "
             f"listing {', '.join(statuses)})"]
    for lane in listings:
        tally = {s: sum(1 for m in lane.listed if m.status == s) for s in statuses}
        counts = ", ".join(f"{n} {s}" for s, n in tally.items())
        lines.append(f"{lane.lane}: {counts} of {lane.total} mutants{_score(lane.scores)}")
        for m in lane.listed:
            where = f"{m.qualname} line {_first_lines(m.lines)}" if m.lines else m.qualname
            lines.append(f"    {m.mutant_id}: {m.status:<11} {where} [{m.operator}]")
    listed = sum(len(lane.listed) for lane in listings)
    lines.append(f"{listed} mutant{'' if listed == 1 else 's'} listed" + (
        "; `python -m arib show ID` shows one's diff and the checks that reach it"
        if listed else ""))
    return "\n".join(lines)
