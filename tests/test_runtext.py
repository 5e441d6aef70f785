"""What `run` prints (arib.reports.runtext): evidence for every outcome, and the one timeout
rule that admission and the survey keep (arib.judging.run_status)."""

from __future__ import annotations

import dataclasses

import pytest

from arib.checks.registry import get_check
from arib.execute import RunOptions, child_finding
from arib.ground.child import ChildOutcome, ChildStatus
from arib.ground.model import MutantStatus, Verdict
from arib.judging import run_status
from arib.mutants.registry import get_mutant
from arib.reports.runtext import outcome_word, render_run, run_json
from arib.targets.registry import get_target

HANGS = "ARIB-POP-001"  # its invariant says a call does not hang
PLAIN = "ARIB-CONC-001"


def _timed_out(check_id: str):  # type: ignore[no-untyped-def]
    check = get_check(check_id)
    opts = RunOptions(params=check.resolve_params(None))
    outcome = ChildOutcome(ChildStatus.TIMEOUT, detail="stack of the hung child", duration_s=75)
    return check, child_finding(check, get_target("sqlite-file"), opts, outcome, 75.0)


@pytest.mark.parametrize(("check_id", "word", "status"), [
    (HANGS, "violated", MutantStatus.KILLED),
    (PLAIN, "timeout", MutantStatus.TIMEOUT),
])
def test_a_timeout_is_read_by_one_rule_in_run_and_in_admission(
        check_id: str, word: str, status: MutantStatus) -> None:
    check, finding = _timed_out(check_id)
    assert check.hang_invariant is (check_id == HANGS)
    assert outcome_word(check, finding) == word
    assert run_status(check, Verdict.VIOLATED, [finding]) is status


def test_a_timed_out_mutant_run_prints_its_evidence_and_the_rule() -> None:
    check, finding = _timed_out(HANGS)
    mutant = get_mutant("sqlite_zero_limit_means_all")
    text = render_run(check, [finding], mutant, MutantStatus.KILLED)
    first = text.splitlines()[0]
    assert first.startswith(f"mutant {mutant.id} (handwritten) under {HANGS}: KILLED")
    assert "a timeout is a violation for ARIB-POP-001" in text
    assert "child killed at its hard time limit (75.0s + grace)" in text
    assert "stack of the hung child" in text  # the child's detail, as the evidence
    assert f"VIOLATED {HANGS} on sqlite-file: ran past its time limit (75.0 s)" in text
    doc = run_json(check, [finding], mutant, MutantStatus.KILLED)
    assert doc["outcome"] == "violated" and doc["verdict"] == "error" and doc["timed_out"]
    assert doc["mutant"] == {"id": mutant.id, "name": mutant.name, "status": "killed",
                             "expected": "violated", "runs": ["violated"]}


def test_a_timeout_of_another_check_is_its_own_outcome() -> None:
    check, finding = _timed_out(PLAIN)
    text = render_run(check, [finding])
    assert text.startswith(f"TIMEOUT {PLAIN} on sqlite-file")
    assert "a timeout is not a kill for ARIB-CONC-001" in text


def test_every_outcome_has_evidence() -> None:
    check, finding = _timed_out(PLAIN)
    held = dataclasses.replace(finding, verdict=Verdict.HELD, timed_out=False, reason=None,
                               traceback=None, trials=3, seeds=(1, 2, 3))
    text = render_run(check, [held])
    assert text.startswith("HELD ARIB-CONC-001 on sqlite-file: 0 of 3 trials violated")
    assert "seeds:     1, 2, 3" in text and "3 trials judged, no sample recorded" in text
