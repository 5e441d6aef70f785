"""What a bench run covered: the lanes and checks it selected and measured, and why not the rest.

Recorded in every run document, so that "partial" is read from the document, never guessed:
the regression gate compares only the cells a run measured, and `accept` refuses a partial run
unless told `--partial`.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from arib.ground.keys import Cell

NOT_SELECTED_LANE = "lane not selected in this run (--lanes)"
NOT_SELECTED_CHECK = "check not selected in this run (--checks)"
INTERRUPTED = "the run was interrupted before this cell was measured"


@dataclass(frozen=True)
class RunCoverage:
    """The lanes and checks a run selected and measured, and the reason for each one it did not."""

    lanes_selected: tuple[str, ...]
    lanes_measured: tuple[str, ...]
    checks_selected: tuple[str, ...]
    checks_admitted: tuple[str, ...]
    every_lane: bool  # the selection held every lane the harness knows
    every_check: bool  # ... and every check
    complete: bool  # False when the run was interrupted
    lanes_not_measured: Mapping[str, str] = field(default_factory=dict)  # lane -> reason
    checks_not_measured: Mapping[str, str] = field(default_factory=dict)  # check -> reason
    shard: str | None = None  # "k/n" for one shard of a sharded run (merge makes it whole)

    @property
    def partial(self) -> bool:
        """True for a run of a subset of lanes or checks, an interrupted one, or a shard."""
        return not (self.complete and self.every_lane and self.every_check) or bool(self.shard)

    def partial_reasons(self) -> list[str]:
        """Why the run is partial, in words (empty for a whole run)."""
        reasons = []
        if not self.every_lane:
            reasons.append(f"lanes selected: {', '.join(self.lanes_selected) or 'none'}")
        if not self.every_check:
            reasons.append(f"checks selected: {', '.join(self.checks_selected) or 'none'}")
        if not self.complete:
            reasons.append("interrupted (complete: false)")
        if self.shard:
            reasons.append(f"shard {self.shard} of a sharded run (`merge` its shards)")
        return reasons

    def in_scope(self, cell: Cell) -> bool:
        """True when the run selected the cell's check and measured its lane."""
        return cell.check_id in self.checks_selected and cell.lane in self.lanes_measured

    def why_not_measured(self, cell: Cell, measured: Collection[Cell] = ()) -> str | None:
        """Why the run has no finding for ``cell`` without that being a change, or None.

        None means the run should have measured the cell: a cell of the baseline that is then
        absent is really gone (e.g. its check is no longer admitted).
        """
        if cell.lane not in self.lanes_measured:
            return self.lanes_not_measured.get(cell.lane) or NOT_SELECTED_LANE
        if cell.check_id not in self.checks_selected:
            return NOT_SELECTED_CHECK
        if not self.complete and cell not in measured:
            return INTERRUPTED
        return None

    def to_json(self) -> dict[str, Any]:
        """The JSON form of this coverage."""
        return {
            "lanes_selected": list(self.lanes_selected),
            "lanes_measured": list(self.lanes_measured),
            "lanes_not_measured": dict(self.lanes_not_measured),
            "checks_selected": list(self.checks_selected),
            "checks_admitted": list(self.checks_admitted),
            "checks_not_measured": dict(self.checks_not_measured),
            "every_lane": self.every_lane,
            "every_check": self.every_check,
            "complete": self.complete,
            "partial": self.partial,
            **({"shard": self.shard} if self.shard else {}),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RunCoverage:
        """Coverage from its JSON form (the reasons default to none)."""
        return cls(
            lanes_selected=tuple(data["lanes_selected"]),
            lanes_measured=tuple(data["lanes_measured"]),
            checks_selected=tuple(data["checks_selected"]),
            checks_admitted=tuple(data["checks_admitted"]),
            every_lane=bool(data["every_lane"]),
            every_check=bool(data["every_check"]),
            complete=bool(data["complete"]),
            lanes_not_measured=dict(data.get("lanes_not_measured", {})),
            checks_not_measured=dict(data.get("checks_not_measured", {})),
            shard=data.get("shard"),
        )


def known_selection() -> tuple[frozenset[str], frozenset[str]]:
    """Every lane a default bench run selects and every check id the harness has."""
    from arib.checks.registry import check_ids
    from arib.targets.registry import real_lanes

    return frozenset(t.name for t in real_lanes()), check_ids()


def coverage_of(document: Mapping[str, Any]) -> RunCoverage:
    """The coverage of a run document; older documents without one are read conservatively.

    An older document (before coverage was recorded) lists only the lanes it measured and the
    ones it could not; it counts as a whole run only when those name every lane and its
    parameters every check the harness knows now.
    """
    if "coverage" in document:
        return RunCoverage.from_json(document["coverage"])
    parameters = document["parameters"]
    missing = {n["name"]: n["reason"] for n in document.get("not_measured", [])}
    measured = tuple(parameters["lanes"])
    selected = (*measured, *(name for name in missing if name not in measured))
    checks = tuple(parameters["checks"])
    lanes, check_ids = known_selection()
    return RunCoverage(
        lanes_selected=selected, lanes_measured=measured, checks_selected=checks,
        checks_admitted=tuple(a["check_id"] for a in document["admission"] if a["admitted"]),
        every_lane=lanes <= set(selected), every_check=check_ids <= set(checks),
        complete=bool(parameters["complete"]), lanes_not_measured=missing,
        checks_not_measured={a["check_id"]: not_admitted(a["reasons"])
                             for a in document["admission"] if not a["admitted"]},
    )


def not_admitted(reasons: Sequence[str]) -> str:
    """Why a selected check was not measured: it was not admitted, for these reasons."""
    return "not admitted: " + ("; ".join(reasons) or "see the admission table")
