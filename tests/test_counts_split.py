"""Counts say what they count: ``wrong_result`` (a call returned a wrong result) and ``raised``
(a call that must succeed raised), with ``errors`` kept in the JSON for old readers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from arib.api.report import Report
from arib.checks.common import tally
from arib.ground.model import Counts, Finding, Verdict
from arib.reports.markdown import render_markdown
from arib.runs.results import read_results

RESULTS = Path(__file__).parents[1] / "results"


def test_the_old_keyword_is_counted_as_a_wrong_result_and_cannot_be_read_back() -> None:
    counts = Counts(errors=2, raised=1)
    assert (counts.wrong_result, counts.raised, counts.total) == (2, 1, 3)
    with pytest.raises(AttributeError):
        counts.errors  # noqa: B018 - reading the old name must fail, not give 0


def test_json_keeps_errors_as_the_sum_for_old_readers() -> None:
    document = Counts(lost=1, wrong_result=2, raised=3).to_json()
    assert document["errors"] == 5
    assert Counts.from_json(document) == Counts(lost=1, wrong_result=2, raised=3)
    assert "errors" not in Counts(wrong_result=2).labelled()


def test_a_form_written_before_the_split_reads_errors_as_wrong_result() -> None:
    assert Counts.from_json({"lost": 1, "errors": 4}) == Counts(lost=1, wrong_result=4)
    # a split form is read by its own fields, never by the sum
    assert Counts.from_json({"wrong_result": 0, "raised": 2, "errors": 2}) == Counts(raised=2)


def test_tally_counts_exceptions_as_raised() -> None:
    counts = tally([{"a": 1}, {"a": 2}], [{"a": 1}], raised=2)
    assert counts == Counts(lost=1, raised=2)


def _finding(counts: Counts) -> Finding:
    return Finding(invariant_id="ARIB-CONC-001", invariant="i", fault="f", target="t",
                   sdk_version="1", python_version="3", verdict=Verdict.VIOLATED, trials=1,
                   violating_trials=1, counts=counts, seeds=(1,), duration_s=0.1)


def test_people_see_wrong_result_and_raised_never_errors() -> None:
    report = Report(factory="m.f", lane="f", seed=0, duration_s=0.1,
                    findings=(_finding(Counts(lost=3, wrong_result=1, raised=2)),))
    text = str(report)
    assert "lost 3, wrong_result 1, raised 2" in text and "errors" not in text


def test_committed_results_still_read_and_render() -> None:
    paths = sorted(RESULTS.glob("*-openai-agents-0.24.0.json"))
    if not paths:
        pytest.skip("no committed result of openai-agents 0.24.0")
    raw = json.loads(paths[-1].read_text())
    document = read_results(paths[-1])
    for finding in raw["findings"]:
        counts = Counts.from_json(finding["counts"])
        assert counts.total == sum(finding["counts"].get(k, 0) for k in
                                   ("lost", "duplicated", "foreign", "errors"))
    text = render_markdown(document)
    assert " errors " not in text.replace("writer errors", "")


def test_compare_sees_no_change_in_the_split_alone() -> None:
    from arib.runs.compare import same_counts, summary

    old = {"lost": 1, "duplicated": 0, "foreign": 0, "errors": 2}
    new = Counts(lost=1, wrong_result=1, raised=1).to_json()
    assert same_counts(old, new) and same_counts(new, old)
    assert not same_counts(new, Counts(lost=1, wrong_result=2).to_json())
    assert not same_counts(old, Counts(lost=1, raised=3).to_json())
    finding = {"verdict": "violated", "violating_trials": 1, "trials": 2, "counts": new}
    assert summary(finding) == "violated 1/2 (lost 1, wrong_result 1, raised 1)"
