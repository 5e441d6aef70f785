"""The parity gate's report: its records, its verdicts, and the one type that holds them.

``GateReport.to_json`` is the contract ``kind = "arib/agent-session-parity-v1"``, validated by
``harness/schemas/parity-report.schema.json``. A report is the run's ``RunFacts`` (known before
any lane runs) and its ``RunOutcome`` (what it found); the report of a finished run and the one
of a run whose harness step failed are made the same way.

Outcomes speak the bench's language (``arib.ground.model``): every ``FailReason`` carries a
``Verdict`` (``error`` for a failed step, ``violated`` for a broken criterion) and names its
lane when it is about one; each lane's comparison with the reference lane has the verdict
``merge_verdicts`` gives over its reasons, and the gate's exit code is ``verdict_exit_code`` of
the same merge over every reason, as for the bench's findings.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from arib.checks.parity.records import workflow_domains
from arib.ground.model import ExitCode, Verdict, merge_verdicts, verdict_exit_code
from arib.ground.services import NotMeasured
from arib.mutants.base import MutantSpec
from arib.mutants.parity import parity_json
from arib.parity.compare import Comparison
from arib.parity.options import GateOptions
from arib.parity.runner import LaneReport, LaneStatus

if TYPE_CHECKING:
    from arib.parity.generative import GeneratedCase

KIND = "arib/agent-session-parity-v1"
SCHEMA = "parity-report.schema.json"
SCHEMA_VERSION = 1

# The report's word for each verdict a fail reason can carry (its "failures" field).
_FAILURE_KIND = {Verdict.ERROR: "step_failed", Verdict.VIOLATED: "violation"}


@dataclass(frozen=True)
class FailReason:
    """One reason the gate did not pass: a failed step (``error``, exit 4) or a violated
    criterion (``violated``, exit 1), about one lane or (``lane`` None) about the whole run."""

    verdict: Verdict
    text: str
    lane: str | None = None

    def __post_init__(self) -> None:
        if self.verdict not in _FAILURE_KIND:
            raise ValueError(
                f"a fail reason's verdict is error or violated, not {self.verdict.value!r}: "
                f"a reason that held is no reason ({self.text!r})"
            )

    def to_json(self) -> dict[str, str]:
        """The JSON form of this reason: its kind (error or violated) and text."""
        return {"kind": _FAILURE_KIND[self.verdict], "text": self.text}


def gate_verdict(reasons: Sequence[FailReason]) -> Verdict:
    """The merge of every reason's verdict over ``held``: held exactly when nothing failed."""
    return merge_verdicts([Verdict.HELD, *(r.verdict for r in reasons)])


def compared_anything(report: LaneReport) -> bool:
    """True when the lane ran at least one workflow or case without abstaining."""
    return any(r.abstained is None for r in report.results())


def lane_verdict(
    report: LaneReport,
    reasons: Sequence[FailReason],
    *,
    reference_failed: bool = False,
    reference: str,
) -> Verdict:
    """One lane's comparison with the reference lane, merged over the reasons naming it.

    ``held`` when no reason names the lane, ``not_applicable`` when it also compared nothing
    (it abstained from every workflow and case), ``error`` when it could not be compared
    because the reference lane itself failed (``reference_failed``). The reference lane is
    held to its own part of the criteria: it ran every workflow and case, and each passed.
    """
    if reference_failed and report.lane != reference:
        base = Verdict.ERROR
    elif compared_anything(report):
        base = Verdict.HELD
    else:
        base = Verdict.NOT_APPLICABLE
    return merge_verdicts([base, *(r.verdict for r in reasons if r.lane == report.lane)])


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
    verdict: Verdict = Verdict.HELD  # its comparison with the reference lane (lane_verdict)

    def to_json(self) -> dict[str, Any]:
        """The JSON form of this lane summary."""
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
            "verdict": self.verdict.value,
        }


def lane_summary(
    report: LaneReport, notes: Sequence[str], verdict: Verdict = Verdict.HELD
) -> LaneSummary:
    """The gate report's line for one lane report, with the gate's own notes on it and its
    ``verdict`` against the reference lane."""
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
        verdict=verdict,
    )


def lane_summaries(
    reports: Sequence[LaneReport],
    notes: Mapping[str, Sequence[str]],
    reasons: Sequence[FailReason],
    reference: str,
) -> tuple[LaneSummary, ...]:
    """Every lane's line, with its notes and its verdict over the run's fail ``reasons``
    (``reference``: the name of the lane the others were compared with)."""
    reference_failed = any(r.lane == reference and r.status is LaneStatus.ERROR for r in reports)
    return tuple(
        lane_summary(
            r,
            notes.get(r.lane, ()),
            lane_verdict(r, reasons, reference_failed=reference_failed, reference=reference),
        )
        for r in reports
    )


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

    def to_json(self) -> dict[str, Any]:
        """The report's ``history_*`` fields."""
        return {
            "history_samples": self.samples,
            "history_p95_ms": None if self.p95_ms is None else round(self.p95_ms, 3),
            "history_p95_enforced": self.enforced,
            "history_p95_ok": self.ok,
        }


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


@dataclass(frozen=True)
class GateReport:
    """The parity gate's verdict and everything behind it: the run's facts and its outcome."""

    facts: RunFacts
    outcome: RunOutcome
    history_appended: bool = False

    @property
    def verdict(self) -> Verdict:
        """The gate's verdict (``gate_verdict`` of its fail reasons)."""
        return gate_verdict(self.outcome.reasons)

    @property
    def ok(self) -> bool:
        """Passed: no fail reason."""
        return self.verdict is Verdict.HELD

    @property
    def exit_code(self) -> ExitCode:
        """0 passed, 1 only violated criteria, 4 a failed step (as the bench's exit codes)."""
        return verdict_exit_code(self.verdict)

    def to_json(self) -> dict[str, Any]:
        """The JSON form of the gate report (the parity report's document)."""
        facts, outcome, opts = self.facts, self.outcome, self.facts.opts
        workflows = tuple(w.name for w in opts.run_workflows)
        run_domains = workflow_domains(opts.run_workflows)
        return {
            "kind": KIND,
            "schema_version": SCHEMA_VERSION,
            "ok": self.ok,
            "exit_code": int(self.exit_code),
            "mode": facts.mode,
            "sdk": {"name": opts.kind.family, "version": facts.sdk},
            "harness_commit": facts.harness_commit,
            "lock_hash": facts.lock_hash,
            "started": facts.started,
            "environment": dict(outcome.environment),
            "parameters": dict(opts.parameters()),
            "lanes": [lane.to_json() for lane in outcome.lanes],
            "reference_lane": opts.kind.reference_lane,
            "not_measured": [{"lane": n.name, "reason": n.reason} for n in facts.not_measured],
            "workflow_count": len(workflows),
            "domain_count": len(run_domains),
            "workflows": list(workflows),
            "domains": list(run_domains),
            "elapsed_ms": round(outcome.elapsed_ms, 3),
            "budget_ms": opts.budget_ms,
            **outcome.history.to_json(),
            "p95_min_samples": opts.p95_min_samples,
            "history_path": facts.history_path,
            "history_appended": self.history_appended,
            "fail_reasons": [r.text for r in outcome.reasons],
            "failures": [r.to_json() for r in outcome.reasons],
            **_comparison_json(outcome.workflows),
            "normalization_rules": opts.kind.rules(),
            "generative": {
                "seed": opts.seed,
                "case_count": len(outcome.cases),
                "cases": [c.to_json() for c in outcome.cases],
                "missing_cases": _lists(outcome.case_comparison.missing),
                "mismatches": [m.to_json() for m in outcome.case_comparison.mismatches],
            },
            "mutant": parity_json(facts.mutant) if facts.mutant else None,
        }


def _lists(by_lane: Mapping[str, Sequence[str]]) -> dict[str, list[str]]:
    return {lane: list(names) for lane, names in by_lane.items()}


def _comparison_json(cmp: Comparison) -> dict[str, Any]:
    """The report's fields of the workflows' comparison with the reference lane."""
    return {
        "missing_workflows": _lists(cmp.missing),
        "abstained_workflows": {
            lane: [{"workflow": name, "reason": reason} for name, reason in entries]
            for lane, entries in cmp.abstained.items()
        },
        "failed_workflows": _lists(cmp.failed),
        "workflow_mismatches": [m.to_json() for m in cmp.mismatches],
        "domain_mismatches": [m.to_json() for m in cmp.domain_mismatches],
    }
