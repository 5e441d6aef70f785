"""Comparing lanes with the reference lane: missing workflows, hash and domain mismatches.

For every workflow (and generated case) the parity hash of each lane (``replay_hash_normalized``
when a normalization rule applied, else ``replay_hash``) and its ok state must equal the
reference lane's. A mismatch shows every lane's hashes and ok state, and for each differing lane
the first read whose digest differs, as a unified diff of pretty JSON.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from arib.checks.parity.records import Read, Workflow, WorkflowResult
from arib.parity.runner import LaneReport

DIFF_MAX_LINES = 120


@dataclass(frozen=True)
class LaneHashes:
    """One lane's outcome for one workflow."""

    lane: str
    present: bool
    ok: bool | None
    replay_hash: str | None
    replay_hash_normalized: str | None
    parity_hash: str | None
    matches: bool
    error: str | None = None
    # Set when the lane abstained (not compared): why its runtime never offered the contract.
    abstained: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The JSON form of this lane's hashes for one workflow."""
        return {
            "lane": self.lane,
            "present": self.present,
            "ok": self.ok,
            "replay_hash": self.replay_hash,
            "replay_hash_normalized": self.replay_hash_normalized,
            "parity_hash": self.parity_hash,
            "matches": self.matches,
            "error": self.error,
            "abstained": self.abstained,
        }


@dataclass(frozen=True)
class FirstDifference:
    """The first read where a lane's digest differs from the reference lane's."""

    lane: str
    read_index: int
    reference_label: str | None
    lane_label: str | None
    diff: str | None
    note: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The JSON form of this first difference."""
        return {
            "lane": self.lane,
            "read_index": self.read_index,
            "reference_label": self.reference_label,
            "lane_label": self.lane_label,
            "diff": self.diff,
            "note": self.note,
        }


@dataclass(frozen=True)
class WorkflowMismatch:
    """A workflow (or generated case) on which some lane disagrees with the reference lane."""

    workflow: str
    domain: str
    reference: LaneHashes
    lanes: tuple[LaneHashes, ...]
    first_differences: tuple[FirstDifference, ...]
    case_seed: int | None = None
    replay: tuple[tuple[str, str], ...] = ()

    @property
    def differing_lanes(self) -> tuple[str, ...]:
        """The lanes that differ from the reference lane (abstaining lanes left out)."""
        return tuple(h.lane for h in self.lanes if not h.matches and h.abstained is None)

    def to_json(self) -> dict[str, Any]:
        """The JSON form of this mismatch, the reference lane's hashes and every lane's."""
        return {
            "workflow": self.workflow,
            "domain": self.domain,
            "case_seed": self.case_seed,
            "reference": self.reference.to_json(),
            "lanes": [h.to_json() for h in self.lanes],
            "differing_lanes": list(self.differing_lanes),
            "first_differences": [d.to_json() for d in self.first_differences],
            "replay": [{"lane": lane, "command": cmd} for lane, cmd in self.replay],
        }


@dataclass(frozen=True)
class DomainMismatch:
    """A domain whose success count or ok state on a lane differs from the reference lane."""

    domain: str
    lane: str
    ok_count: int
    total: int
    ok: bool
    reference_ok_count: int
    reference_total: int
    reference_ok: bool

    def to_json(self) -> dict[str, Any]:
        """The JSON form of this domain mismatch."""
        return {
            "domain": self.domain,
            "lane": self.lane,
            "ok_count": self.ok_count,
            "total": self.total,
            "ok": self.ok,
            "reference_ok_count": self.reference_ok_count,
            "reference_total": self.reference_total,
            "reference_ok": self.reference_ok,
        }


def _pretty(read: Read | None) -> list[str]:
    if read is None:
        return ["<no read at this index>\n"]
    text = json.dumps(
        {"label": read.label, "items": read.items}, indent=2, sort_keys=True, ensure_ascii=False
    )
    return [line + "\n" for line in text.splitlines()]


def read_diff(
    reference: Read | None, other: Read | None, *, reference_lane: str, lane: str, index: int
) -> str:
    """A unified diff of the pretty JSON of two reads (capped at ``DIFF_MAX_LINES`` lines)."""
    lines = list(
        difflib.unified_diff(
            _pretty(reference),
            _pretty(other),
            fromfile=f"{reference_lane} read #{index} {reference.label if reference else '-'}",
            tofile=f"{lane} read #{index} {other.label if other else '-'}",
            n=3,
        )
    )
    if len(lines) > DIFF_MAX_LINES:
        dropped = len(lines) - DIFF_MAX_LINES
        lines = lines[:DIFF_MAX_LINES] + [f"... ({dropped} more diff lines)\n"]
    return "".join(lines)


def first_difference(
    reference: WorkflowResult, other: WorkflowResult, *, reference_lane: str, lane: str
) -> FirstDifference:
    """Where ``other`` first departs from ``reference``, read by read."""
    ref_hashes, hashes = reference.read_hashes, other.read_hashes
    index = next(
        (i for i, (a, b) in enumerate(zip(ref_hashes, hashes, strict=False)) if a != b),
        min(len(ref_hashes), len(hashes)),
    )
    ref_label = reference.read_labels[index] if index < len(reference.read_labels) else None
    lane_label = other.read_labels[index] if index < len(other.read_labels) else None
    if ref_label is None and lane_label is None:
        return FirstDifference(
            lane,
            index,
            None,
            None,
            None,
            note="every read digest is equal; the difference is in the ok state or the error",
        )
    if reference.reads is None or other.reads is None:
        return FirstDifference(
            lane,
            index,
            ref_label,
            lane_label,
            None,
            note="reads are not kept in a reused lane report; rerun without --reuse for a diff",
        )
    ref_read = reference.reads[index] if index < len(reference.reads) else None
    read = other.reads[index] if index < len(other.reads) else None
    diff = read_diff(ref_read, read, reference_lane=reference_lane, lane=lane, index=index)
    note = None
    if not diff:
        note = (
            "the reads differ only inside shortened long strings or in key order; compare the "
            "sha256 in the shortened values"
        )
    return FirstDifference(lane, index, ref_label, lane_label, diff or None, note=note)


def _hashes(
    lane: str, result: WorkflowResult | None, reference: WorkflowResult | None
) -> LaneHashes:
    if result is None:
        return LaneHashes(lane, False, None, None, None, None, False)
    if result.abstained is not None and lane_abstains(result, reference):
        return LaneHashes(
            lane,
            True,
            result.ok,
            result.replay_hash,
            result.replay_hash_normalized,
            result.parity_hash,
            True,
            abstained=result.abstained,
        )
    matches = (
        reference is not None
        and result.parity_hash == reference.parity_hash
        and result.ok == reference.ok
    )
    return LaneHashes(
        lane=lane,
        present=True,
        ok=result.ok,
        replay_hash=result.replay_hash,
        replay_hash_normalized=result.replay_hash_normalized,
        parity_hash=result.parity_hash,
        matches=matches,
        error=(result.error or "").splitlines()[0] if result.error else None,
    )


def lane_abstains(result: WorkflowResult, reference: WorkflowResult | None) -> bool:
    """Whether ``result`` is an abstention to list rather than compare.

    A lane abstains only where its runtime never offered the contract; the reference lane
    offers every one, so when the reference itself abstained the lane is compared as usual
    (and the gate names the reference's abstention as a failed step).
    """
    return result.abstained is not None and (reference is None or reference.abstained is None)


@dataclass(frozen=True)
class Comparison:
    """Everything the comparison of lanes found."""

    missing: dict[str, list[str]]
    failed: dict[str, list[str]]
    mismatches: tuple[WorkflowMismatch, ...]
    domain_mismatches: tuple[DomainMismatch, ...]
    # lane -> [(workflow, why the lane's runtime never offered what it needs)]
    abstained: dict[str, list[tuple[str, str]]] = field(default_factory=dict)


def compare(
    reference: LaneReport,
    lanes: Sequence[LaneReport],
    expected: Sequence[Workflow],
    *,
    cases: bool = False,
    case_seeds: dict[str, int] | None = None,
    replay_for: Any = None,
) -> Comparison:
    """Compare every lane with the reference lane over ``expected`` workflows (or cases).

    Long because its four parts (missing and failed workflows, abstentions, workflow
    mismatches, domain mismatches) are built in sequence over the same per-lane indexes
    (``pick``, ``ref_results``, ``by_lane``), which split functions would pass around.
    """

    def pick(report: LaneReport) -> dict[str, WorkflowResult]:
        return {r.name: r for r in (report.cases if cases else report.workflows)}

    ref_results = pick(reference)
    by_lane = {report.lane: pick(report) for report in lanes}
    missing: dict[str, list[str]] = {}
    failed: dict[str, list[str]] = {}
    for report in (reference, *lanes):
        results = pick(report)
        gone = [w.name for w in expected if w.name not in results]
        if gone:
            missing[report.lane] = gone
        bad = [w.name for w in expected if w.name in results and not results[w.name].ok]
        if bad:
            failed[report.lane] = bad

    abstained: dict[str, list[tuple[str, str]]] = {}
    for report in (reference, *lanes):
        for workflow in expected:
            result = pick(report).get(workflow.name)
            if result is not None and result.abstained is not None:
                abstained.setdefault(report.lane, []).append((workflow.name, result.abstained))

    mismatches: list[WorkflowMismatch] = []
    for workflow in expected:
        ref = ref_results.get(workflow.name)
        ref_h = _hashes(reference.lane, ref, ref)
        lane_h = [_hashes(lane, by_lane[lane].get(workflow.name), ref) for lane in by_lane]
        if ref is not None and all(h.matches for h in lane_h) and ref.ok:
            continue
        if ref is not None and all(h.matches for h in lane_h) and not ref.ok:
            # The reference failed the same way everywhere: reported as failed, not a mismatch.
            continue
        firsts = []
        for h in lane_h:
            result = by_lane[h.lane].get(workflow.name)
            if h.matches or result is None or ref is None:
                continue  # an abstaining lane matches by construction: it is listed instead
            firsts.append(first_difference(ref, result, reference_lane=reference.lane, lane=h.lane))
        seed = (case_seeds or {}).get(workflow.name)
        replay = (
            tuple((h.lane, replay_for(workflow.name, h.lane)) for h in lane_h if not h.matches)
            if replay_for is not None
            else ()
        )
        mismatches.append(
            WorkflowMismatch(
                workflow=workflow.name,
                domain=workflow.domain,
                reference=ref_h,
                lanes=tuple(lane_h),
                first_differences=tuple(firsts),
                case_seed=seed,
                replay=replay,
            )
        )

    domain_mismatches: list[DomainMismatch] = []
    if not cases:
        for domain in sorted({w.domain for w in expected}):
            names = [w.name for w in expected if w.domain == domain]
            ref_ok = sum(1 for n in names if n in ref_results and ref_results[n].ok)
            for lane, results in by_lane.items():
                ok = sum(1 for n in names if n in results and results[n].ok)
                if ok != ref_ok:
                    domain_mismatches.append(
                        DomainMismatch(
                            domain,
                            lane,
                            ok,
                            len(names),
                            ok == len(names),
                            ref_ok,
                            len(names),
                            ref_ok == len(names),
                        )
                    )
    return Comparison(
        missing, failed, tuple(mismatches), tuple(domain_mismatches), abstained=abstained
    )
