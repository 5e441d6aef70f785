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

Every failing step still yields a report naming it in ``fail_reasons``. Exit codes
(``harness.model.ExitCode``): 0 the gate passed; 1 it failed on mismatches, budget or p95; 4 a
step failed (a lane could not be built or died, a workflow raised or is missing, the history is
corrupt or foreign, a retained report is stale or corrupt) or nothing was compared; 2 is a usage
error, raised before any lane runs.
"""

from __future__ import annotations

import enum
import json
import tempfile
import time
import traceback
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from harness import results as _results
from harness import scratch
from harness.errors import UsageError
from harness.model import ExitCode
from harness.parity.compare import Comparison, DomainMismatch, WorkflowMismatch, compare
from harness.parity.generative import (
    GeneratedCase,
    generate,
    replay_command,
)
from harness.parity.history import (
    HISTORY_WINDOW,
    HistoryEntry,
    append_history,
    p95,
    read_history,
)
from harness.parity.lanes import REFERENCE_LANE, LaneSpec, NotMeasured, select_lanes
from harness.parity.mutants import ParityMutant, get_parity_mutant
from harness.parity.normalize import rules_table
from harness.parity.options import (
    GateOptions,
    out_inside_results,
)
from harness.parity.retained import lane_report_path, load_retained, parity_dir
from harness.parity.runner import (
    LaneReport,
    LaneStatus,
    definitions_digest,
    now_iso,
    preload,
    run_lanes,
    sdk_version,
)
from harness.parity.workflows import domains

KIND = "arib/agent-session-parity-v1"
SCHEMA = "parity-report.schema.json"
SCHEMA_VERSION = 1


class FailKind(str, enum.Enum):
    """Whether a fail reason is a failed step (exit 4) or a violated gate criterion (exit 1)."""

    STEP = "step_failed"
    VIOLATION = "violation"


@dataclass(frozen=True)
class FailReason:
    """One reason the gate did not pass."""

    kind: FailKind
    text: str

    def to_json(self) -> dict[str, str]:
        return {"kind": self.kind.value, "text": self.text}


# ---------------------------------------------------------------------------------------------
# The report.


@dataclass(frozen=True)
class LaneSummary:
    """One lane in the gate report."""

    name: str
    target: str
    loop: str
    status: str
    ok: bool
    reused: bool
    elapsed_ms: float
    cpu_ms: float | None
    workflows_ok: int
    workflows_total: int
    workflows_abstained: int
    cases_ok: int
    cases_total: int
    error: str | None
    mutant: str | None
    report: str | None
    notes: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "target": self.target,
            "loop": self.loop,
            "status": self.status,
            "ok": self.ok,
            "reused": self.reused,
            "elapsed_ms": round(self.elapsed_ms, 3),
            "cpu_ms": None if self.cpu_ms is None else round(self.cpu_ms, 3),
            "workflows_ok": self.workflows_ok,
            "workflows_total": self.workflows_total,
            "workflows_abstained": self.workflows_abstained,
            "cases_ok": self.cases_ok,
            "cases_total": self.cases_total,
            "error": self.error,
            "mutant": self.mutant,
            "report": self.report,
            "notes": list(self.notes),
        }


@dataclass(frozen=True)
class GateReport:
    """The parity gate's verdict and everything behind it."""

    ok: bool
    exit_code: ExitCode
    mode: str
    sdk: str
    harness_commit: str
    lock_hash: str
    started: str
    parameters: Mapping[str, Any]
    lanes: tuple[LaneSummary, ...]
    reference_lane: str
    not_measured: tuple[NotMeasured, ...]
    workflows: tuple[str, ...]
    domains: tuple[str, ...]
    elapsed_ms: float
    budget_ms: float
    history_samples: int
    history_p95_ms: float | None
    history_p95_enforced: bool
    history_p95_ok: bool
    p95_min_samples: int
    history_path: str
    history_appended: bool
    fail_reasons: tuple[FailReason, ...]
    missing_workflows: Mapping[str, list[str]]
    failed_workflows: Mapping[str, list[str]]
    workflow_mismatches: tuple[WorkflowMismatch, ...]
    domain_mismatches: tuple[DomainMismatch, ...]
    cases: tuple[GeneratedCase, ...]
    case_mismatches: tuple[WorkflowMismatch, ...]
    missing_cases: Mapping[str, list[str]]
    seed: int
    mutant: ParityMutant | None = None
    environment: Mapping[str, Any] = field(default_factory=dict)
    abstained: Mapping[str, list[tuple[str, str]]] = field(default_factory=dict)

    @property
    def workflow_count(self) -> int:
        return len(self.workflows)

    @property
    def domain_count(self) -> int:
        return len(self.domains)

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": KIND,
            "schema_version": SCHEMA_VERSION,
            "ok": self.ok,
            "exit_code": int(self.exit_code),
            "mode": self.mode,
            "sdk": {"name": "openai-agents", "version": self.sdk},
            "harness_commit": self.harness_commit,
            "lock_hash": self.lock_hash,
            "started": self.started,
            "environment": dict(self.environment),
            "parameters": dict(self.parameters),
            "lanes": [lane.to_json() for lane in self.lanes],
            "reference_lane": self.reference_lane,
            "not_measured": [n.to_json() for n in self.not_measured],
            "workflow_count": self.workflow_count,
            "domain_count": self.domain_count,
            "workflows": list(self.workflows),
            "domains": list(self.domains),
            "elapsed_ms": round(self.elapsed_ms, 3),
            "budget_ms": self.budget_ms,
            "history_samples": self.history_samples,
            "history_p95_ms": (
                None if self.history_p95_ms is None else round(self.history_p95_ms, 3)
            ),
            "history_p95_enforced": self.history_p95_enforced,
            "history_p95_ok": self.history_p95_ok,
            "p95_min_samples": self.p95_min_samples,
            "history_path": self.history_path,
            "history_appended": self.history_appended,
            "fail_reasons": [r.text for r in self.fail_reasons],
            "failures": [r.to_json() for r in self.fail_reasons],
            "missing_workflows": {k: list(v) for k, v in self.missing_workflows.items()},
            "abstained_workflows": {
                lane: [{"workflow": name, "reason": reason} for name, reason in entries]
                for lane, entries in self.abstained.items()
            },
            "failed_workflows": {k: list(v) for k, v in self.failed_workflows.items()},
            "workflow_mismatches": [m.to_json() for m in self.workflow_mismatches],
            "domain_mismatches": [m.to_json() for m in self.domain_mismatches],
            "normalization_rules": rules_table(),
            "generative": {
                "seed": self.seed,
                "case_count": len(self.cases),
                "cases": [c.to_json() for c in self.cases],
                "missing_cases": {k: list(v) for k, v in self.missing_cases.items()},
                "mismatches": [m.to_json() for m in self.case_mismatches],
            },
            "mutant": self.mutant.to_json() if self.mutant else None,
        }


def exit_code_for(reasons: Sequence[FailReason]) -> ExitCode:
    if any(r.kind is FailKind.STEP for r in reasons):
        return ExitCode.ERROR_OR_NOTHING
    if reasons:
        return ExitCode.VIOLATED
    return ExitCode.OK


# ---------------------------------------------------------------------------------------------
# Running the gate.


def _binding(
    lane: LaneSpec, opts: GateOptions, sdk: str, commit: str, lock: str, defs: str
) -> dict[str, Any]:
    import platform

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
class GateRun:
    """A finished gate run: the report and the lane reports it was made from."""

    report: GateReport
    lane_reports: tuple[LaneReport, ...]


def run_gate(opts: GateOptions, *, mode: str) -> GateRun:
    """Run (or reuse) every lane, compare with the reference lane, and judge. Writes nothing.

    Bad options raise ``UsageError`` before anything runs; any later failure of the harness
    itself still returns a report, naming the failed step in ``fail_reasons`` (exit 4).
    """
    opts.validate()
    mutant = get_parity_mutant(opts.mutant) if opts.mutant else None
    lanes, not_measured = select_lanes(opts.lanes, opts.loops, opts.extra_targets, opts.services)
    known = {m.lane for m in not_measured}
    not_measured = (*not_measured, *(m for m in opts.unavailable if m.lane not in known))
    started_at = now_iso()
    started = time.perf_counter()
    try:
        return _run_gate(opts, mode, mutant, lanes, not_measured)
    except Exception as exc:  # noqa: BLE001 - a broken step still yields a report
        detail = "".join(traceback.format_exception_only(type(exc), exc)).strip()
        reason = FailReason(
            FailKind.STEP,
            f"the parity gate itself failed ({detail}); this is a harness bug, not a backend "
            f"finding:\n{traceback.format_exc(limit=8)}",
        )
        sdk = sdk_version()
        return GateRun(
            GateReport(
                ok=False,
                exit_code=ExitCode.ERROR_OR_NOTHING,
                mode=mode,
                sdk=sdk,
                harness_commit=_safe(_results.harness_commit),
                lock_hash=_safe(lambda: _results.lock_hash(sdk)),
                started=started_at,
                parameters=opts.parameters(),
                lanes=(),
                reference_lane=REFERENCE_LANE.name,
                not_measured=not_measured,
                workflows=tuple(w.name for w in opts.run_workflows),
                domains=domains(opts.run_workflows),
                elapsed_ms=(time.perf_counter() - started) * 1000.0,
                budget_ms=opts.budget_ms,
                history_samples=0,
                history_p95_ms=None,
                history_p95_enforced=False,
                history_p95_ok=True,
                p95_min_samples=opts.p95_min_samples,
                history_path=str(parity_dir(opts.results_dir, sdk) / "history.jsonl"),
                history_appended=False,
                fail_reasons=(reason,),
                missing_workflows={
                    lane.name: [w.name for w in opts.run_workflows] for lane in lanes
                },
                failed_workflows={},
                workflow_mismatches=(),
                domain_mismatches=(),
                cases=(),
                case_mismatches=(),
                missing_cases={},
                seed=opts.seed,
                mutant=mutant,
            ),
            (),
        )


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


def _safe(fn: Any) -> str:
    try:
        return str(fn())
    except Exception as exc:  # noqa: BLE001
        return f"unknown ({type(exc).__name__})"


def _run_gate(
    opts: GateOptions,
    mode: str,
    mutant: ParityMutant | None,
    lanes: Sequence[LaneSpec],
    not_measured: Sequence[NotMeasured],
) -> GateRun:
    generated = generate(opts.seed, opts.cases, opts.case_seed) if opts.cases else ()
    case_workflows = [(c.seed, c.workflow) for c in generated]
    sdk = sdk_version()
    commit = _results.harness_commit()
    lock = _results.lock_hash(sdk)
    defs = definitions_digest(opts.run_workflows, [w for _, w in case_workflows])
    base = parity_dir(opts.results_dir, sdk)
    reasons: list[FailReason] = []
    started_at = now_iso()
    preload()

    started = time.perf_counter()
    notes: dict[str, list[str]] = {}
    clean_tree = commit != "unknown" and not commit.endswith("-dirty")
    kept: dict[str, LaneReport] = {}
    fresh: list[tuple[LaneSpec, dict[str, Any]]] = []
    for lane in lanes:
        binding = _binding(lane, opts, sdk, commit, lock, defs)
        lane_notes = notes.setdefault(lane.name, [])
        if opts.reuse and mutant is None:
            if not clean_tree:
                lane_notes.append(
                    f"not reused: harness commit {commit!r} is not a clean commit, so no "
                    "retained report can be bound to it; ran fresh"
                )
            else:
                found = load_retained(lane_report_path(base, lane.name), binding)
                if found.failure:
                    reasons.append(FailReason(FailKind.STEP, found.failure))
                if found.note:
                    lane_notes.append(found.note)
                if found.report is not None:
                    kept[lane.name] = found.report
                    continue
        fresh.append((lane, binding))
    ran = run_lanes(
        spread_service_lanes(fresh),
        opts.run_workflows,
        case_workflows,
        services=opts.services,
        mutant=mutant,
        timeout_s=opts.lane_timeout_s,
        tmpdir=opts.tmpdir,
        workers=opts.workers,
    )
    kept.update((r.lane, r) for r in ran)
    reports = [kept[lane.name] for lane in lanes]

    reference = next(r for r in reports if r.lane == REFERENCE_LANE.name)
    others = [r for r in reports if r.lane != REFERENCE_LANE.name]
    for lane_report in reports:
        if lane_report.status is LaneStatus.ERROR:
            reasons.append(
                FailReason(FailKind.STEP, f"lane {lane_report.lane!r} failed: {lane_report.error}")
            )
    if len(reports) < 2:
        reasons.append(
            FailReason(
                FailKind.STEP,
                "nothing was compared: only the reference lane ran; name at least one more "
                "lane or loop",
            )
        )

    wf_cmp = compare(reference, others, opts.run_workflows)
    seeds = {w.name: s for s, w in case_workflows}
    case_cmp = compare(
        reference,
        others,
        [w for _, w in case_workflows],
        cases=True,
        case_seeds=seeds,
        replay_for=lambda name, lane: replay_command(
            next(c for c in generated if c.workflow.name == name), lane, opts.mutant
        ),
    )
    elapsed_ms = (time.perf_counter() - started) * 1000.0
    reasons.extend(_comparison_reasons(wf_cmp, reference.lane, reports, what="workflow"))
    reasons.extend(_comparison_reasons(case_cmp, reference.lane, reports, what="case"))
    if elapsed_ms > opts.budget_ms:
        reasons.append(
            FailReason(
                FailKind.VIOLATION,
                f"elapsed {elapsed_ms:.0f} ms is over the budget of {opts.budget_ms:.0f} ms",
            )
        )

    history_path = base / "history.jsonl"
    history = read_history(history_path)
    if history.problem:
        reasons.append(FailReason(FailKind.STEP, history.problem))
    lane_names = tuple(sorted(r.lane for r in reports))
    samples = [
        e.elapsed_ms
        for e in history.entries
        if e.sdk == sdk
        and e.lanes == lane_names
        and e.cases == len(case_workflows)
        and e.workers == opts.workers
    ][-HISTORY_WINDOW:]
    all_fresh = all(not r.reused for r in reports) and mutant is None
    sample_ok = all_fresh and not reasons and history.problem is None
    if sample_ok:
        samples.append(elapsed_ms)
    p95_ms = p95(samples)
    enforced = len(samples) >= opts.p95_min_samples
    p95_ok = not enforced or (p95_ms is not None and p95_ms <= opts.budget_ms)
    if not p95_ok:
        reasons.append(
            FailReason(
                FailKind.VIOLATION,
                f"history p95 {p95_ms:.0f} ms over {len(samples)} samples is over the budget "
                f"of {opts.budget_ms:.0f} ms",
            )
        )

    summaries = tuple(_summary(r, notes.get(r.lane, [])) for r in reports)
    report = GateReport(
        ok=not reasons,
        exit_code=exit_code_for(reasons),
        mode=mode,
        sdk=sdk,
        harness_commit=commit,
        lock_hash=lock,
        started=started_at,
        parameters=opts.parameters(),
        lanes=summaries,
        reference_lane=REFERENCE_LANE.name,
        not_measured=tuple(not_measured),
        workflows=tuple(w.name for w in opts.run_workflows),
        domains=domains(opts.run_workflows),
        elapsed_ms=elapsed_ms,
        budget_ms=opts.budget_ms,
        history_samples=len(samples),
        history_p95_ms=p95_ms,
        history_p95_enforced=enforced,
        history_p95_ok=p95_ok,
        p95_min_samples=opts.p95_min_samples,
        history_path=str(history_path),
        history_appended=False,
        fail_reasons=tuple(reasons),
        missing_workflows=wf_cmp.missing,
        failed_workflows=wf_cmp.failed,
        workflow_mismatches=wf_cmp.mismatches,
        domain_mismatches=wf_cmp.domain_mismatches,
        cases=generated,
        case_mismatches=case_cmp.mismatches,
        missing_cases=case_cmp.missing,
        abstained=wf_cmp.abstained,
        seed=opts.seed,
        mutant=mutant,
        environment=_results.environment(),
    )
    return GateRun(report, tuple(reports))


def _comparison_reasons(
    cmp: Comparison, reference_lane: str, reports: Sequence[LaneReport], *, what: str
) -> list[FailReason]:
    broken = {r.lane for r in reports if r.status is LaneStatus.ERROR}
    out: list[FailReason] = []
    for name, reason in cmp.abstained.get(reference_lane, []):
        out.append(
            FailReason(
                FailKind.STEP,
                f"the reference lane {reference_lane!r} abstained from {what} {name!r} "
                f"({reason}); the reference backend must offer every contract",
            )
        )
    for lane, names in cmp.missing.items():
        if lane in broken:
            continue  # the lane's own failure is already named
        out.append(
            FailReason(FailKind.STEP, f"{what}s missing on lane {lane!r}: {', '.join(names)}")
        )
    results = {r.lane: {w.name: w for w in r.results()} for r in reports}
    for lane, names in cmp.failed.items():
        for name in names:
            error = (results[lane][name].error or "no detail").splitlines()[0]
            # A backend that raises through its public API where the reference lane completes
            # is a divergence (evidence, exit 1); the reference lane raising is the harness's
            # own failure (exit 4).
            kind = FailKind.STEP if lane == reference_lane else FailKind.VIOLATION
            out.append(FailReason(kind, f"{what} {name!r} raised on lane {lane!r}: {error}"))
    if reference_lane in broken:
        if cmp.mismatches or cmp.domain_mismatches:
            out.append(
                FailReason(
                    FailKind.STEP,
                    f"no {what} was compared: the reference lane {reference_lane!r} failed",
                )
            )
        return out
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
                    FailKind.VIOLATION,
                    f"{what} {mismatch.workflow!r}: lane {lane_h.lane!r} parity hash "
                    f"{(lane_h.parity_hash or '')[:12]} ok={lane_h.ok} differs from reference "
                    f"lane {reference_lane!r} {(mismatch.reference.parity_hash or '')[:12]} "
                    f"ok={mismatch.reference.ok}{at}",
                )
            )
    for dm in cmp.domain_mismatches:
        if dm.lane in broken:
            continue  # every domain of a broken lane is short; its failure is already named
        out.append(
            FailReason(
                FailKind.VIOLATION,
                f"domain {dm.domain!r}: lane {dm.lane!r} has {dm.ok_count}/{dm.total} ok, "
                f"reference lane {reference_lane!r} has {dm.reference_ok_count}/"
                f"{dm.reference_total}",
            )
        )
    return out


def _summary(report: LaneReport, notes: Sequence[str]) -> LaneSummary:
    return LaneSummary(
        name=report.lane,
        target=report.target,
        loop=report.loop,
        status=report.status.value,
        ok=report.ok,
        reused=report.reused,
        elapsed_ms=report.elapsed_ms,
        cpu_ms=report.cpu_ms,
        workflows_ok=sum(1 for w in report.workflows if w.ok),
        workflows_total=len(report.workflows),
        workflows_abstained=sum(1 for w in report.workflows if w.abstained is not None),
        cases_ok=sum(1 for c in report.cases if c.ok),
        cases_total=len(report.cases),
        error=report.error.splitlines()[0] if report.error else None,
        mutant=report.mutant,
        report=f"lanes/{report.lane}.json",
        notes=tuple([*report.notes, *notes]),
    )


# ---------------------------------------------------------------------------------------------
# Check (read-only) and update (the producer).


def _dump(document: Mapping[str, Any]) -> str:
    return json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def _write_run(run: GateRun, folder: Path, *, fresh_only: bool) -> None:
    for lane in run.lane_reports:
        if fresh_only and lane.reused:
            continue
        _results.atomic_write_text(lane_report_path(folder, lane.lane), _dump(lane.to_json()))
    document = run.report.to_json()
    _results.validate(document, SCHEMA)
    _results.atomic_write_text(folder / "report.json", _dump(document))


def check(opts: GateOptions, out: Path | None = None) -> tuple[dict[str, Any], Path]:
    """Run the gate read-only: report and lane reports go to a fresh temporary folder only,
    inside the run's private folder (harness.scratch), which is removed when the process ends.

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
        _results.atomic_write_text(out, _dump(document))
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
    base = parity_dir(opts.results_dir, run.report.sdk)
    appended = False
    report = run.report
    history_path = base / "history.jsonl"
    only_p95 = all(r.text.startswith("history p95") for r in report.fail_reasons)
    if all(not lane.reused for lane in run.lane_reports) and (report.ok or only_p95):
        if read_history(history_path).problem is None:
            append_history(
                history_path,
                HistoryEntry(
                    at=report.started,
                    elapsed_ms=report.elapsed_ms,
                    sdk=report.sdk,
                    harness_commit=report.harness_commit,
                    lock_hash=report.lock_hash,
                    lanes=tuple(sorted(lane.lane for lane in run.lane_reports)),
                    cases=len(report.cases),
                    workers=opts.workers,
                ),
            )
            appended = True
    run = GateRun(replace(report, history_appended=appended), run.lane_reports)
    _write_run(run, base, fresh_only=True)
    document = run.report.to_json()
    if out is not None:
        _results.atomic_write_text(out, _dump(document))
    return document, base
