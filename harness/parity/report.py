"""The parity gate's report: its records, its exit code, and the one place it is built.

``GateReport.to_json`` is the contract ``kind = "arib/agent-session-parity-v1"``, validated by
``harness/schemas/parity-report.schema.json``; ``build_report`` makes every report, the one of
a finished run and the one of a run whose harness step failed.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from harness.ground.model import ExitCode
from harness.ground.services import NotMeasured
from harness.parity.compare import Comparison, DomainMismatch, WorkflowMismatch
from harness.parity.generative import GeneratedCase
from harness.parity.lanes import REFERENCE_LANE
from harness.parity.mutantkit import parity_json
from harness.parity.normalize import rules_table
from harness.parity.options import GateOptions
from harness.parity.runner import LaneReport
from harness.parity.workflows import domains
from mutants.base import MutantSpec

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


def exit_code_for(reasons: Sequence[FailReason]) -> ExitCode:
    """4 when a step failed, 1 when only a criterion was violated, 0 without reasons."""
    if any(r.kind is FailKind.STEP for r in reasons):
        return ExitCode.ERROR_OR_NOTHING
    if reasons:
        return ExitCode.VIOLATED
    return ExitCode.OK


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


def lane_summary(report: LaneReport, notes: Sequence[str]) -> LaneSummary:
    """The gate report's line for one lane report (with the gate's own notes on it)."""
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
    mutant: MutantSpec | None = None
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
            "not_measured": [{"lane": n.name, "reason": n.reason} for n in self.not_measured],
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
            "mutant": parity_json(self.mutant) if self.mutant else None,
        }


# ---------------------------------------------------------------------------------------------
# Building the report.


@dataclass(frozen=True)
class RunFacts:
    """What a gate run is, known before any lane runs: mode, versions, options, lanes."""

    mode: str
    sdk: str
    harness_commit: str
    lock_hash: str
    started: str
    opts: GateOptions
    not_measured: tuple[NotMeasured, ...]
    mutant: MutantSpec | None
    history_path: str


@dataclass(frozen=True)
class HistoryJudgement:
    """The p95 criterion: comparable samples, their p95, and whether it was enforced and met."""

    samples: int = 0
    p95_ms: float | None = None
    enforced: bool = False
    ok: bool = True


def nothing_compared(missing: Mapping[str, list[str]] | None = None) -> Comparison:
    """A comparison that compared nothing (``missing``: what each lane lacks, if named)."""
    return Comparison(missing=dict(missing or {}), failed={}, mismatches=(), domain_mismatches=())


@dataclass(frozen=True)
class RunOutcome:
    """What a gate run found; the defaults are those of a run that compared nothing."""

    reasons: tuple[FailReason, ...]
    elapsed_ms: float
    lanes: tuple[LaneSummary, ...] = ()
    history: HistoryJudgement = HistoryJudgement()
    workflows: Comparison = field(default_factory=nothing_compared)
    cases: tuple[GeneratedCase, ...] = ()
    case_comparison: Comparison = field(default_factory=nothing_compared)
    environment: Mapping[str, Any] = field(default_factory=dict)


def build_report(facts: RunFacts, outcome: RunOutcome) -> GateReport:
    """The gate report of a run: passed when there is no fail reason (the only builder)."""
    opts = facts.opts
    return GateReport(
        ok=not outcome.reasons,
        exit_code=exit_code_for(outcome.reasons),
        mode=facts.mode,
        sdk=facts.sdk,
        harness_commit=facts.harness_commit,
        lock_hash=facts.lock_hash,
        started=facts.started,
        parameters=opts.parameters(),
        lanes=outcome.lanes,
        reference_lane=REFERENCE_LANE.name,
        not_measured=facts.not_measured,
        workflows=tuple(w.name for w in opts.run_workflows),
        domains=domains(opts.run_workflows),
        elapsed_ms=outcome.elapsed_ms,
        budget_ms=opts.budget_ms,
        history_samples=outcome.history.samples,
        history_p95_ms=outcome.history.p95_ms,
        history_p95_enforced=outcome.history.enforced,
        history_p95_ok=outcome.history.ok,
        p95_min_samples=opts.p95_min_samples,
        history_path=facts.history_path,
        history_appended=False,
        fail_reasons=outcome.reasons,
        missing_workflows=outcome.workflows.missing,
        failed_workflows=outcome.workflows.failed,
        workflow_mismatches=outcome.workflows.mismatches,
        domain_mismatches=outcome.workflows.domain_mismatches,
        cases=outcome.cases,
        case_mismatches=outcome.case_comparison.mismatches,
        missing_cases=outcome.case_comparison.missing,
        abstained=outcome.workflows.abstained,
        seed=opts.seed,
        mutant=facts.mutant,
        environment=outcome.environment,
    )
