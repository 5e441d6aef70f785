"""The parity gate's criteria, each turned into fail reasons: lanes, comparisons, time, p95.

A failed step (a lane that could not run, the reference lane raising or abstaining, a corrupt
history) is a reason with verdict ``error`` (exit 4); a divergence from the reference lane,
elapsed time over budget or a p95 over budget is ``violated`` (exit 1). A reason about one
lane names it, so that the lane's comparison gets its verdict (``report.lane_verdict``).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from arib.ground.model import Verdict
from arib.mutants.base import MutantSpec
from arib.parity.compare import Comparison
from arib.parity.history import HISTORY_WINDOW, p95, read_history
from arib.parity.options import GateOptions
from arib.parity.report import FailReason, HistoryJudgement
from arib.parity.runner import LaneReport, LaneStatus


def lane_reasons(reports: Sequence[LaneReport]) -> list[FailReason]:
    """A failed step for every lane that could not run, and for a run that compares nothing."""
    out = [
        FailReason(Verdict.ERROR, f"lane {report.lane!r} failed: {report.error}", report.lane)
        for report in reports
        if report.status is LaneStatus.ERROR
    ]
    if len(reports) < 2:
        out.append(
            FailReason(
                Verdict.ERROR,
                "nothing was compared: only the reference lane ran; name at least one more "
                "lane or loop",
            )
        )
    return out


def comparison_reasons(
    cmp: Comparison, reference_lane: str, reports: Sequence[LaneReport], *, what: str
) -> list[FailReason]:
    """The fail reasons of one comparison (``what``: "workflow" or "case") with the reference."""
    broken = {r.lane for r in reports if r.status is LaneStatus.ERROR}
    out: list[FailReason] = []
    for name, reason in cmp.abstained.get(reference_lane, []):
        out.append(
            FailReason(
                Verdict.ERROR,
                f"the reference lane {reference_lane!r} abstained from {what} {name!r} "
                f"({reason}); the reference backend must offer every contract",
                reference_lane,
            )
        )
    for lane, names in cmp.missing.items():
        if lane in broken:
            continue  # the lane's own failure is already named
        out.append(
            FailReason(
                Verdict.ERROR, f"{what}s missing on lane {lane!r}: {', '.join(names)}", lane
            )
        )
    results = {r.lane: {w.name: w for w in r.results()} for r in reports}
    for lane, names in cmp.failed.items():
        for name in names:
            error = (results[lane][name].error or "no detail").splitlines()[0]
            # A backend that raises through its public API where the reference lane completes
            # is a divergence (evidence, exit 1); the reference lane raising is the harness's
            # own failure (exit 4).
            verdict = Verdict.ERROR if lane == reference_lane else Verdict.VIOLATED
            out.append(
                FailReason(verdict, f"{what} {name!r} raised on lane {lane!r}: {error}", lane)
            )
    if reference_lane in broken:
        if cmp.mismatches or cmp.domain_mismatches:
            out.append(
                FailReason(
                    Verdict.ERROR,
                    f"no {what} was compared: the reference lane {reference_lane!r} failed",
                    reference_lane,
                )
            )
        return out
    out.extend(_mismatch_reasons(cmp, reference_lane, what))
    for dm in cmp.domain_mismatches:
        if dm.lane in broken:
            continue  # every domain of a broken lane is short; its failure is already named
        out.append(
            FailReason(
                Verdict.VIOLATED,
                f"domain {dm.domain!r}: lane {dm.lane!r} has {dm.ok_count}/{dm.total} ok, "
                f"reference lane {reference_lane!r} has {dm.reference_ok_count}/"
                f"{dm.reference_total}",
                dm.lane,
            )
        )
    return out


def _mismatch_reasons(cmp: Comparison, reference_lane: str, what: str) -> list[FailReason]:
    """A violation for every lane whose parity hash differs from the reference lane's."""
    out: list[FailReason] = []
    for mismatch in cmp.mismatches:
        for lane_h in mismatch.lanes:
            if lane_h.matches or not lane_h.present:
                continue
            where = next((d for d in mismatch.first_differences if d.lane == lane_h.lane), None)
            at = (
                f"; first differing read #{where.read_index} "
                f"({where.reference_label!r} vs {where.lane_label!r})"
                if where is not None
                else ""
            )
            if mismatch.case_seed is not None:
                replay = dict(mismatch.replay).get(lane_h.lane)
                at += f"; case seed {mismatch.case_seed}, replay: {replay}"
            out.append(
                FailReason(
                    Verdict.VIOLATED,
                    f"{what} {mismatch.workflow!r}: lane {lane_h.lane!r} parity hash "
                    f"{(lane_h.parity_hash or '')[:12]} ok={lane_h.ok} differs from reference "
                    f"lane {reference_lane!r} {(mismatch.reference.parity_hash or '')[:12]} "
                    f"ok={mismatch.reference.ok}{at}",
                    lane_h.lane,
                )
            )
    return out


def budget_reasons(elapsed_ms: float, opts: GateOptions) -> list[FailReason]:
    """A violation when the gate's elapsed time is over its budget."""
    if elapsed_ms > opts.budget_ms:
        return [
            FailReason(
                Verdict.VIOLATED,
                f"elapsed {elapsed_ms:.0f} ms is over the budget of {opts.budget_ms:.0f} ms",
            )
        ]
    return []


def judge_history(
    history_path: Path,
    reports: Sequence[LaneReport],
    opts: GateOptions,
    *,
    sdk: str,
    case_count: int,
    elapsed_ms: float,
    mutant: MutantSpec | None,
    failed_before: bool,
) -> tuple[HistoryJudgement, list[FailReason]]:
    """The p95 criterion over the comparable history samples, and its fail reasons.

    A corrupt or foreign history is a failed step. This run counts as a sample only when every
    lane ran fresh, no mutant was applied and nothing failed before (``failed_before``).
    """
    reasons: list[FailReason] = []
    history = read_history(history_path)
    if history.problem:
        reasons.append(FailReason(Verdict.ERROR, history.problem))
    lane_names = tuple(sorted(r.lane for r in reports))
    samples = [
        e.elapsed_ms
        for e in history.entries
        if e.sdk == sdk
        and e.lanes == lane_names
        and e.cases == case_count
        and e.workers == opts.workers
    ][-HISTORY_WINDOW:]
    all_fresh = all(not r.reused for r in reports) and mutant is None
    sample_ok = all_fresh and not failed_before and history.problem is None
    if sample_ok:
        samples.append(elapsed_ms)
    p95_ms = p95(samples)
    enforced = len(samples) >= opts.p95_min_samples
    p95_ok = not enforced or (p95_ms is not None and p95_ms <= opts.budget_ms)
    if not p95_ok:
        reasons.append(
            FailReason(
                Verdict.VIOLATED,
                f"history p95 {p95_ms:.0f} ms over {len(samples)} samples is over the budget "
                f"of {opts.budget_ms:.0f} ms",
            )
        )
    judgement = HistoryJudgement(samples=len(samples), p95_ms=p95_ms, enforced=enforced, ok=p95_ok)
    return judgement, reasons
