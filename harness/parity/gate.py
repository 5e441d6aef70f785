"""The parity gate: run every lane, compare with the reference lane, judge, and report.

Contract (``kind = "arib/agent-session-parity-v1"``, validated by
``harness/schemas/parity-report.schema.json``). The gate passes when:

- every reference workflow exists and passes (ok) in every lane, and so does every case;
- every parity hash (``replay_hash_normalized`` when a written normalization rule applied,
  else ``replay_hash``) equals the reference lane's (``reference@asyncio``);
- per-domain success counts and ok states equal the reference lane's;
- the gate's elapsed wall time is within ``budget_ms``;
- once the history holds at least ``p95_min_samples`` comparable samples, their p95 (nearest
  rank) is within ``budget_ms``.

``check`` is read-only: it writes only to a fresh temporary folder. ``update`` is the explicit
producer: the only writer of ``results/parity/<sdk>/`` (``report.json``, ``lanes/*.json``) and
the only appender to ``history.jsonl``. A run enters the history only when every lane ran fresh
(none reused) and the gate held on everything but the history p95 itself (else a slow past
could never be outgrown). A retained lane report is reused (``--reuse``) only when its binding
(lane identity, SDK version, harness commit, lock hash, Python version, workflow definitions,
seed and cases) equals this run's, it was ok, and the work tree is clean.

Every failing step still yields a report naming it in ``fail_reasons``; each reason carries a
``Verdict``, and each lane its comparison's verdict (``arib.parity.report``). Exit codes
(``arib.ground.model.verdict_exit_code`` of the merged verdict): 0 the gate passed (held);
1 it failed on mismatches, budget or p95 (violated); 4 a step failed (error: a lane could not
be built or died, a workflow raised or is missing, the history is corrupt or foreign, a
retained report is stale or corrupt) or nothing was compared; 2 is a usage error, raised
before any lane runs.
"""

from __future__ import annotations

import json
import tempfile
import time
import traceback
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from arib.execute import sdk_version
from arib.ground import provenance, scratch
from arib.ground.errors import UsageError
from arib.ground.files import atomic_write_text
from arib.ground.model import Verdict
from arib.ground.services import NotMeasured
from arib.mutants.base import MutantSpec
from arib.mutants.registry import get_parity_mutant
from arib.parity.compare import Comparison, compare
from arib.parity.history import HistoryEntry, append_history, read_history
from arib.parity.judge import budget_reasons, comparison_reasons, judge_history, lane_reasons
from arib.parity.lanes import LaneSpec
from arib.parity.options import GateOptions, out_inside_results
from arib.parity.plan import LanePlan, plan_lanes, spread_service_lanes
from arib.parity.report import (
    KIND,
    SCHEMA,
    SCHEMA_VERSION,
    FailReason,
    GateReport,
    LaneSummary,
    RunFacts,
    RunOutcome,
    lane_summaries,
    nothing_compared,
)
from arib.parity.retained import lane_report_path, parity_dir
from arib.parity.runner import (
    LaneReport,
    definitions_digest,
    now_iso,
    run_lanes,
)
from arib.runs import results as _results
from arib.runs.partial_write import beside, document_shrink, read_document

if TYPE_CHECKING:
    from arib.checks.parity.kind import WorkflowKind
    from arib.parity.generative import GeneratedCase

__all__ = [
    "KIND",
    "SCHEMA",
    "SCHEMA_VERSION",
    "FailReason",
    "GateOptions",
    "GateReport",
    "GateRun",
    "LaneSummary",
    "check",
    "preload",
    "run_gate",
    "spread_service_lanes",
    "update",
]


@dataclass(frozen=True)
class GateRun:
    """A finished gate run: the report and the lane reports it was made from."""

    report: GateReport
    lane_reports: tuple[LaneReport, ...]


# ---------------------------------------------------------------------------------------------
# Running the gate.


def run_gate(opts: GateOptions, *, mode: str) -> GateRun:
    """Run (or reuse) every lane, compare with the reference lane, and judge. Writes nothing.

    Bad options raise ``UsageError`` before anything runs; any later failure of the harness
    itself still returns a report, naming the failed step in ``fail_reasons`` (exit 4).
    """
    opts.validate()
    mutant = get_parity_mutant(opts.mutant) if opts.mutant else None
    lanes, selected_out = opts.selection()
    # A lane whose server could not be had keeps the service manager's reason (it says why).
    unavailable = {m.name: m for m in opts.unavailable}
    not_measured = (*(unavailable.pop(m.name, m) for m in selected_out), *unavailable.values())
    started_at = now_iso()
    started = time.perf_counter()
    try:
        return _run_gate(opts, mode, mutant, lanes, not_measured)
    except Exception as exc:  # noqa: BLE001 - a broken step still yields a report
        reason = FailReason(
            Verdict.ERROR,
            f"the parity gate itself failed ({_detail(exc)}); this is a harness bug, not a "
            f"backend finding:\n{traceback.format_exc(limit=8)}",
        )
        facts = _failed_facts(opts, mode, mutant, not_measured, started_at)
        outcome = RunOutcome(
            reasons=(reason,),
            elapsed_ms=(time.perf_counter() - started) * 1000.0,
            workflows=nothing_compared(
                {lane.name: [w.name for w in opts.run_workflows] for lane in lanes}
            ),
        )
        return GateRun(GateReport(facts, outcome), ())


def _detail(exc: BaseException) -> str:
    return "".join(traceback.format_exception_only(type(exc), exc)).strip()


def _failed_facts(
    opts: GateOptions,
    mode: str,
    mutant: MutantSpec | None,
    not_measured: Sequence[NotMeasured],
    started_at: str,
) -> RunFacts:
    """The facts of a run whose own step failed: each one that cannot be had says why."""
    sdk = sdk_version()
    return RunFacts(
        mode=mode,
        sdk=sdk,
        harness_commit=_safe(provenance.harness_commit),
        lock_hash=_safe(lambda: provenance.lock_hash(sdk)),
        started=started_at,
        opts=opts,
        not_measured=tuple(not_measured),
        mutant=mutant,
        history_path=str(_folder(opts, sdk) / "history.jsonl"),
    )


def _folder(opts: GateOptions, sdk: str) -> Path:
    """Where this run's kind keeps its parity results for ``sdk`` (the family's version)."""
    return parity_dir(opts.results_dir, opts.kind.folder(sdk))


def _safe(fn: Any) -> str:
    try:
        return str(fn())
    except Exception as exc:  # noqa: BLE001
        return f"unknown ({type(exc).__name__})"


def preload(kind: WorkflowKind) -> None:
    """Import once, here, what the children the gate forks import, so that each starts warm:
    the backend and drivers of every target of ``kind`` (``arib.warm``, as a check's runs warm
    theirs), then the kind's own ``preload``."""
    from arib.warm import warm_all

    warm_all((None, target) for target in kind.targets()[0])
    kind.preload()


def _run_gate(
    opts: GateOptions,
    mode: str,
    mutant: MutantSpec | None,
    lanes: Sequence[LaneSpec],
    not_measured: Sequence[NotMeasured],
) -> GateRun:
    """The gate's steps: plan the lanes, run them, compare, judge each criterion, report."""
    generated: tuple[GeneratedCase, ...] = ()
    if opts.cases:
        from arib.parity.generative import generate

        generated = generate(opts.kind, opts.seed, opts.cases, opts.case_seed)
    case_workflows = [(c.seed, c.workflow) for c in generated]
    sdk = sdk_version()
    commit = provenance.harness_commit()
    lock = provenance.lock_hash(sdk)
    defs = definitions_digest(opts.run_workflows, [w for _, w in case_workflows])
    base = _folder(opts, sdk)
    history_path = base / "history.jsonl"
    facts = RunFacts(
        mode=mode, sdk=sdk, harness_commit=commit, lock_hash=lock, started=now_iso(), opts=opts,
        not_measured=tuple(not_measured), mutant=mutant, history_path=str(history_path),
    )
    preload(opts.kind)

    started = time.perf_counter()
    plan = plan_lanes(
        lanes, opts, mutant, sdk=sdk, commit=commit, lock=lock, defs=defs, base=base
    )
    reports = _run_planned(plan, lanes, opts, case_workflows, mutant)
    reasons = [*plan.reasons, *lane_reasons(reports)]
    wf_cmp, case_cmp = _compare_lanes(reports, opts, generated)
    elapsed_ms = (time.perf_counter() - started) * 1000.0
    reference = opts.kind.reference_lane
    reasons.extend(comparison_reasons(wf_cmp, reference, reports, what="workflow"))
    reasons.extend(comparison_reasons(case_cmp, reference, reports, what="case"))
    reasons.extend(budget_reasons(elapsed_ms, opts))
    history, history_reasons = judge_history(
        history_path, reports, opts, sdk=sdk, case_count=len(case_workflows),
        elapsed_ms=elapsed_ms, mutant=mutant, failed_before=bool(reasons),
    )
    reasons.extend(history_reasons)

    outcome = RunOutcome(
        reasons=tuple(reasons),
        elapsed_ms=elapsed_ms,
        lanes=lane_summaries(reports, plan.notes, reasons, reference),
        history=history,
        workflows=wf_cmp,
        cases=tuple(generated),
        case_comparison=case_cmp,
        environment=provenance.environment(),
    )
    return GateRun(GateReport(facts, outcome), tuple(reports))


def _run_planned(
    plan: LanePlan,
    lanes: Sequence[LaneSpec],
    opts: GateOptions,
    case_workflows: Sequence[tuple[int, Any]],
    mutant: MutantSpec | None,
) -> list[LaneReport]:
    """Run the plan's fresh lanes; every lane's report (reused or fresh) in the lanes' order."""
    ran = run_lanes(
        spread_service_lanes(plan.fresh),
        opts.run_workflows,
        case_workflows,
        services=opts.services,
        mutant=mutant,
        timeout_s=opts.lane_timeout_s,
        tmpdir=opts.tmpdir,
        workers=opts.workers,
        play=opts.kind.play,
    )
    reports = dict(plan.kept)
    reports.update((r.lane, r) for r in ran)
    return [reports[lane.name] for lane in lanes]


def _compare_lanes(
    reports: Sequence[LaneReport], opts: GateOptions, generated: Sequence[GeneratedCase]
) -> tuple[Comparison, Comparison]:
    """Every lane against the reference lane: over the workflows, then the generated cases."""
    reference = next(r for r in reports if r.lane == opts.kind.reference_lane)
    others = [r for r in reports if r.lane != opts.kind.reference_lane]
    wf_cmp = compare(reference, others, opts.run_workflows)
    seeds = {c.workflow.name: c.seed for c in generated}
    case_cmp = compare(
        reference,
        others,
        [c.workflow for c in generated],
        cases=True,
        case_seeds=seeds,
        replay_for=lambda name, lane: _replay(generated, name, lane, opts.mutant),
    )
    return wf_cmp, case_cmp


def _replay(generated: Sequence[GeneratedCase], name: str, lane: str, mutant: str | None) -> str:
    from arib.parity.generative import replay_command

    return replay_command(next(c for c in generated if c.workflow.name == name), lane, mutant)


# ---------------------------------------------------------------------------------------------
# Check (read-only) and update (the producer).


def _dump(document: Mapping[str, Any]) -> str:
    return json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def _write_run(run: GateRun, folder: Path, *, fresh_only: bool,
               partial: Mapping[str, str] | None = None) -> None:
    for lane in run.lane_reports:
        if fresh_only and lane.reused:
            continue
        atomic_write_text(lane_report_path(folder, lane.lane), _dump(lane.to_json()))
    document = run.report.to_json()
    if partial is not None:
        document["partial"] = dict(partial)
    _results.validate(document, SCHEMA)
    atomic_write_text(folder / "report.json", _dump(document))


def check(opts: GateOptions, out: Path | None = None) -> tuple[dict[str, Any], Path]:
    """Run the gate read-only: report and lane reports go to a fresh temporary folder only,
    inside the run's private folder (arib.ground.scratch), which is removed when the process
    ends.

    ``out``, when given, receives one more copy of the report; it must lie outside the results
    folder (only ``update`` writes there).
    """
    if out is not None:
        out_inside_results(out, opts.results_dir)
    run = run_gate(opts, mode="check")
    folder = Path(tempfile.mkdtemp(prefix="parity-check-", dir=scratch.folder()))
    _write_run(run, folder, fresh_only=False)
    document = run.report.to_json()
    if out is not None:
        atomic_write_text(out, _dump(document))
    return document, folder


def update(opts: GateOptions, out: Path | None = None) -> tuple[dict[str, Any], Path]:
    """Run the gate and retain its outputs: the only writer of ``results/parity/<sdk>/``.

    Writes the report and every fresh lane report, and appends the run to the history when it
    is a fresh run that held (see the module docstring). A mutant run is never retained.
    """
    if opts.mutant:
        raise UsageError(
            f"update does not retain mutant runs (got mutant {opts.mutant!r}); use check"
        )
    run = run_gate(opts, mode="update")
    facts, outcome = run.report.facts, run.report.outcome
    base = _folder(opts, facts.sdk)
    appended = False
    history_path = base / "history.jsonl"
    only_p95 = all(r.text.startswith("history p95") for r in outcome.reasons)
    if all(not lane.reused for lane in run.lane_reports) and (run.report.ok or only_p95):
        if read_history(history_path).problem is None:
            append_history(
                history_path,
                HistoryEntry(
                    at=facts.started,
                    elapsed_ms=outcome.elapsed_ms,
                    sdk=facts.sdk,
                    harness_commit=facts.harness_commit,
                    lock_hash=facts.lock_hash,
                    lanes=tuple(sorted(lane.lane for lane in run.lane_reports)),
                    cases=len(outcome.cases),
                    workers=opts.workers,
                ),
            )
            appended = True
    run = GateRun(replace(run.report, history_appended=appended), run.lane_reports)
    document = run.report.to_json()
    # A run of fewer lanes, workflows or cases never replaces the report that has more: its
    # report and lane reports go beside it, marked partial (arib.runs.partial_write).
    lacks = document_shrink(read_document(base / "report.json"), document)
    where, partial = base, None
    if lacks is not None:
        where = beside(base)
        partial = {"of": str(base / "report.json"), "reason": lacks}
        document["partial"] = partial
        print(f"partial run ({lacks}): written beside {base / 'report.json'}, to {where}, "
              f"marked partial; {base / 'report.json'} is unchanged (run every lane and "
              f"case to replace it)")
    _write_run(run, where, fresh_only=True, partial=partial)
    if out is not None:
        atomic_write_text(out, _dump(document))
    return document, where
