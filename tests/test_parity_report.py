"""The gate report, its verdicts and the gate's criteria, on fixed inputs (no lane runs)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from arib.checks.openai_agents.parity.workflows import REFERENCE_WORKFLOWS, WorkflowResult
from arib.ground.model import ExitCode, Loop, Verdict, merge_verdicts, verdict_exit_code
from arib.ground.services import NotMeasured
from arib.parity.history import HistoryEntry, append_history
from arib.parity.judge import budget_reasons, judge_history, lane_reasons
from arib.parity.options import GateOptions
from arib.parity.report import (
    SCHEMA,
    FailReason,
    GateReport,
    HistoryJudgement,
    RunFacts,
    RunOutcome,
    gate_verdict,
    lane_summaries,
    lane_summary,
    lane_verdict,
    nothing_compared,
)
from arib.parity.runner import LaneReport, LaneStatus
from arib.runs.results import SCHEMA_DIR

REF = "reference@asyncio"
SMALL = tuple(w for w in REFERENCE_WORKFLOWS if w.name in ("chat_multi_turn", "pop_item_undo"))


def _opts(tmp_path: Path, **kw: Any) -> GateOptions:
    base: dict[str, Any] = dict(lanes="sqlite-memory", loops=(Loop.ASYNCIO,), cases=0,
                                workflows=SMALL, results_dir=tmp_path, tmpdir=None, workers=1)
    base.update(kw)
    return GateOptions(**base)


def _facts(tmp_path: Path, **kw: Any) -> RunFacts:
    return RunFacts(
        mode="check", sdk="0.24.0", harness_commit="c0ffee1", lock_hash="lock", started="t0",
        opts=_opts(tmp_path, **kw), not_measured=(NotMeasured("redis-lane", "no server"),),
        mutant=None, history_path=str(tmp_path / "history.jsonl"),
    )


def _validate(document: dict[str, Any]) -> None:
    schema = json.loads((SCHEMA_DIR / SCHEMA).read_text())
    jsonschema.Draft202012Validator(schema).validate(document)


def _lane(name: str, *, reused: bool = False, status: LaneStatus = LaneStatus.OK) -> LaneReport:
    return LaneReport(lane=name, target=name.split("@")[0], loop="asyncio", status=status,
                      binding={}, reused=reused, error="it broke\nsecond line" if status is
                      LaneStatus.ERROR else None)


def test_a_run_whose_step_failed_reports_every_workflow_missing_and_no_history(
    tmp_path: Path,
) -> None:
    reason = FailReason(Verdict.ERROR, "the parity gate itself failed (KeyError: 'boom')")
    lanes = {"reference@asyncio": ["chat_multi_turn", "pop_item_undo"]}
    report = GateReport(_facts(tmp_path), RunOutcome(
        reasons=(reason,), elapsed_ms=12.3456, workflows=nothing_compared(lanes)))
    document = report.to_json()
    _validate(document)
    assert (document["ok"], document["exit_code"]) == (False, 4)
    assert document["lanes"] == [] and document["environment"] == {}
    assert document["missing_workflows"] == lanes
    assert document["failed_workflows"] == {} and document["workflow_mismatches"] == []
    assert (document["history_samples"], document["history_p95_ms"]) == (0, None)
    assert (document["history_p95_enforced"], document["history_p95_ok"]) == (False, True)
    assert document["history_appended"] is False
    assert document["history_path"] == str(tmp_path / "history.jsonl")
    assert document["elapsed_ms"] == 12.346 and document["budget_ms"] == 60_000.0
    assert document["workflows"] == ["chat_multi_turn", "pop_item_undo"]
    assert document["workflow_count"] == 2 and document["reference_lane"] == REF
    assert document["not_measured"] == [{"lane": "redis-lane", "reason": "no server"}]
    assert document["failures"] == [{"kind": "step_failed", "text": reason.text}]
    assert document["generative"]["case_count"] == 0
    assert document["sdk"] == {"name": "openai-agents", "version": "0.24.0"}


def test_the_report_carries_the_outcome_it_is_built_from(tmp_path: Path) -> None:
    history = HistoryJudgement(samples=9, p95_ms=70_000.0, enforced=True, ok=False)
    violation = FailReason(Verdict.VIOLATED, "history p95 70000 ms over 9 samples")
    report = GateReport(_facts(tmp_path, budget_ms=65_000.0), RunOutcome(
        reasons=(violation,), elapsed_ms=1.0, history=history, environment={"python": "3"}))
    document = report.to_json()
    _validate(document)
    assert (document["ok"], document["exit_code"]) == (False, 1)
    assert (document["history_samples"], document["history_p95_ms"]) == (9, 70_000.0)
    assert (document["history_p95_enforced"], document["history_p95_ok"]) == (True, False)
    assert document["environment"] == {"python": "3"} and document["budget_ms"] == 65_000.0
    passed = GateReport(_facts(tmp_path), RunOutcome(reasons=(), elapsed_ms=1.0))
    assert passed.ok and passed.exit_code is ExitCode.OK


def test_a_failed_step_outranks_a_violation() -> None:
    step = FailReason(Verdict.ERROR, "s")
    violation = FailReason(Verdict.VIOLATED, "v")
    assert gate_verdict([]) is Verdict.HELD
    assert gate_verdict([violation]) is Verdict.VIOLATED
    assert gate_verdict([violation, step]) is Verdict.ERROR
    assert [verdict_exit_code(gate_verdict(r)) for r in ([], [violation], [violation, step])] == [
        ExitCode.OK, ExitCode.VIOLATED, ExitCode.ERROR_OR_NOTHING]
    assert step.to_json() == {"kind": "step_failed", "text": "s"}
    assert violation.to_json() == {"kind": "violation", "text": "v"}


@pytest.mark.parametrize("verdict", [Verdict.HELD, Verdict.NOT_APPLICABLE])
def test_a_fail_reason_is_an_error_or_a_violation(verdict: Verdict) -> None:
    with pytest.raises(ValueError, match=repr(verdict.value)):
        FailReason(verdict, "nothing failed")


def _results(*abstained: str | None) -> tuple[WorkflowResult, ...]:
    return tuple(
        WorkflowResult(name=f"w{i}", domain="d", ok=True, replay_hash="h",
                       replay_hash_normalized=None, read_labels=(), read_hashes=(),
                       abstained=why)
        for i, why in enumerate(abstained)
    )


def test_each_lane_has_the_verdict_of_the_reasons_that_name_it() -> None:
    lane = replace(_lane("x@asyncio"), workflows=_results(None, "no close()"))
    other = FailReason(Verdict.ERROR, "about another lane", "y@asyncio")
    run_wide = FailReason(Verdict.VIOLATED, "elapsed over budget")
    diverged = FailReason(Verdict.VIOLATED, "hash differs", "x@asyncio")
    broken = FailReason(Verdict.ERROR, "missing workflow", "x@asyncio")
    assert lane_verdict(lane, [other, run_wide], reference=REF) is Verdict.HELD
    assert lane_verdict(lane, [other, diverged], reference=REF) is Verdict.VIOLATED
    assert lane_verdict(lane, [diverged, broken], reference=REF) is Verdict.ERROR
    # A lane that abstained from everything compared nothing: not applicable, unless named.
    idle = replace(lane, workflows=_results("no close()", "no limit"))
    assert lane_verdict(idle, [other, run_wide], reference=REF) is Verdict.NOT_APPLICABLE
    assert lane_verdict(idle, [diverged], reference=REF) is Verdict.VIOLATED
    summary = lane_summary(lane, ["a note"], lane_verdict(lane, [other, diverged], reference=REF))
    assert summary.verdict is Verdict.VIOLATED and summary.to_json()["verdict"] == "violated"
    assert summary.notes == ("a note",)
    # The gate's verdict is the merge of its lanes' verdicts and the reasons naming no lane.
    reasons = [other, run_wide, diverged]
    lanes = [lane, replace(_lane("y@asyncio"), workflows=_results(None))]
    merged = merge_verdicts([Verdict.HELD,
                             *(lane_verdict(r, reasons, reference=REF) for r in lanes),
                             *(r.verdict for r in reasons if r.lane is None)])
    assert merged is gate_verdict(reasons) is Verdict.ERROR


def test_no_lane_is_held_when_the_reference_lane_failed() -> None:
    ok = replace(_lane("x@asyncio"), workflows=_results(None))
    reference = replace(_lane("reference@asyncio"), workflows=_results(None))
    broken = _lane("reference@asyncio", status=LaneStatus.ERROR)
    failed = FailReason(Verdict.ERROR, "lane 'reference@asyncio' failed", "reference@asyncio")
    lines = lane_summaries([broken, ok], {"x@asyncio": ["n"]}, [failed], REF)
    assert [(x.name, x.verdict, x.notes) for x in lines] == [
        ("reference@asyncio", Verdict.ERROR, ()), ("x@asyncio", Verdict.ERROR, ("n",))]
    lines = lane_summaries([reference, ok], {}, [], REF)
    assert [x.verdict for x in lines] == [Verdict.HELD, Verdict.HELD]


def test_budget_is_violated_only_above_it(tmp_path: Path) -> None:
    opts = _opts(tmp_path, budget_ms=100.0)
    assert budget_reasons(100.0, opts) == []
    (reason,) = budget_reasons(100.6, opts)
    assert reason.verdict is Verdict.VIOLATED
    assert reason.text == "elapsed 101 ms is over the budget of 100 ms"


def test_lane_reasons_name_each_broken_lane_and_a_run_without_a_second_lane() -> None:
    reasons = lane_reasons([_lane("reference@asyncio"),
                            _lane("sqlite-memory@asyncio", status=LaneStatus.ERROR)])
    assert [(r.verdict, r.text, r.lane) for r in reasons] == [
        (Verdict.ERROR, "lane 'sqlite-memory@asyncio' failed: it broke\nsecond line",
         "sqlite-memory@asyncio")]
    (alone,) = lane_reasons([_lane("reference@asyncio")])
    assert alone.verdict is Verdict.ERROR and alone.text.startswith("nothing was compared")


def _entry(elapsed: float, **kw: Any) -> HistoryEntry:
    base: dict[str, Any] = dict(at="t", elapsed_ms=elapsed, sdk="0.24.0", harness_commit="c",
                                lock_hash="l", lanes=("reference@asyncio", "x@asyncio"),
                                cases=0, workers=1)
    base.update(kw)
    return HistoryEntry(**base)


def test_history_counts_only_comparable_samples_and_a_clean_fresh_run(tmp_path: Path) -> None:
    path = tmp_path / "history.jsonl"
    for entry in (_entry(10.0), _entry(20.0), _entry(500.0, sdk="0.19.2"),
                  _entry(500.0, workers=2), _entry(500.0, cases=3),
                  _entry(500.0, lanes=("reference@asyncio",))):
        append_history(path, entry)
    reports = [_lane("x@asyncio"), _lane("reference@asyncio")]
    opts = _opts(tmp_path, budget_ms=35.0, p95_min_samples=3)
    judged, reasons = judge_history(path, reports, opts, sdk="0.24.0", case_count=0,
                                    elapsed_ms=30.0, mutant=None, failed_before=False)
    assert judged == HistoryJudgement(samples=3, p95_ms=30.0, enforced=True, ok=True)
    assert reasons == []
    # A run that failed elsewhere, or reused a lane, is not a sample: p95 of the past only.
    for failed_before, lanes in ((True, reports), (False, [_lane("x@asyncio", reused=True),
                                                          _lane("reference@asyncio")])):
        judged, _ = judge_history(path, lanes, opts, sdk="0.24.0", case_count=0,
                                  elapsed_ms=30.0, mutant=None, failed_before=failed_before)
        assert judged == HistoryJudgement(samples=2, p95_ms=20.0, enforced=False, ok=True)
    judged, reasons = judge_history(path, reports, _opts(tmp_path, budget_ms=25.0,
                                    p95_min_samples=3), sdk="0.24.0", case_count=0,
                                    elapsed_ms=30.0, mutant=None, failed_before=False)
    assert judged.enforced and not judged.ok
    assert [r.text for r in reasons] == [
        "history p95 30 ms over 3 samples is over the budget of 25 ms"]


def test_a_corrupt_history_is_a_failed_step_and_takes_no_sample(tmp_path: Path) -> None:
    path = tmp_path / "history.jsonl"
    path.write_text("not json\n")
    judged, reasons = judge_history(path, [_lane("x@asyncio"), _lane("reference@asyncio")],
                                    _opts(tmp_path), sdk="0.24.0", case_count=0,
                                    elapsed_ms=30.0, mutant=None, failed_before=False)
    assert judged.samples == 0 and [r.verdict for r in reasons] == [Verdict.ERROR]
