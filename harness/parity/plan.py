"""Before the lanes run: each lane's binding, which retained reports are reused, start order."""

from __future__ import annotations

import platform
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from arib.ground.model import Verdict
from arib.mutants.base import MutantSpec
from arib.parity.lanes import LaneSpec
from arib.parity.options import GateOptions
from arib.parity.report import FailReason
from arib.parity.retained import lane_report_path, load_retained
from arib.parity.runner import LaneReport


def binding(
    lane: LaneSpec, opts: GateOptions, sdk: str, commit: str, lock: str, defs: str
) -> dict[str, Any]:
    """What a retained lane report must have been made with to be reused for ``lane``."""
    return {
        "lane": lane.name,
        "target": lane.target.to_json(),
        "sdk": sdk,
        "harness_commit": commit,
        "lock_hash": lock,
        "python": platform.python_version(),
        "definitions": defs,
        "seed": opts.seed,
        "cases": opts.cases,
        "case_seed": opts.case_seed,
    }


@dataclass(frozen=True)
class LanePlan:
    """Lanes whose retained report is reused, lanes to run fresh, notes and failed steps."""

    kept: dict[str, LaneReport]
    fresh: list[tuple[LaneSpec, dict[str, Any]]]
    notes: dict[str, list[str]]
    reasons: list[FailReason]


def plan_lanes(
    lanes: Sequence[LaneSpec],
    opts: GateOptions,
    mutant: MutantSpec | None,
    *,
    sdk: str,
    commit: str,
    lock: str,
    defs: str,
    base: Path,
) -> LanePlan:
    """Reuse a retained lane report (``--reuse``, no mutant, clean commit) when it is bound to
    this run; every other lane runs fresh. A stale or corrupt retained report is a failed step.
    """
    plan = LanePlan(kept={}, fresh=[], notes={}, reasons=[])
    clean_tree = commit != "unknown" and not commit.endswith("-dirty")
    for lane in lanes:
        lane_binding = binding(lane, opts, sdk, commit, lock, defs)
        lane_notes = plan.notes.setdefault(lane.name, [])
        if opts.reuse and mutant is None:
            if not clean_tree:
                lane_notes.append(
                    f"not reused: harness commit {commit!r} is not a clean commit, so no "
                    "retained report can be bound to it; ran fresh"
                )
            else:
                found = load_retained(lane_report_path(base, lane.name), lane_binding)
                if found.failure:
                    # the run's failed step, not the lane's: the lane runs fresh and is compared
                    plan.reasons.append(FailReason(Verdict.ERROR, found.failure))
                if found.note:
                    lane_notes.append(found.note)
                if found.report is not None:
                    plan.kept[lane.name] = found.report
                    continue
        plan.fresh.append((lane, lane_binding))
    return plan


def spread_service_lanes(
    runs: Sequence[tuple[LaneSpec, dict[str, Any]]],
) -> list[tuple[LaneSpec, dict[str, Any]]]:
    """The order lanes start in: service lanes spread evenly among the local ones.

    A service lane spends much of its time waiting on its server; run beside a local lane it
    overlaps with that lane's work, while two lanes of one server run together would only
    queue on that server (the report keeps the lanes' own order either way).
    """
    local = [run for run in runs if run[0].target.service is None]
    service = [run for run in runs if run[0].target.service is not None]
    if not service:
        return list(runs)
    step = len(runs) / len(service)
    slots = {round(step * i + step / 2) for i in range(len(service))}
    order: list[tuple[LaneSpec, dict[str, Any]]] = []
    for position in range(len(runs)):
        if service and (position in slots or not local):
            order.append(service.pop(0))
        else:
            order.append(local.pop(0))
    return order
