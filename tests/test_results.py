"""Result files: the schema validates real runs, rejects bad ones, and writes are atomic."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from arib.caches.verdicts import AdmissionCache
from arib.checks.registry import get_check
from arib.ground.errors import ResultsError
from arib.ground.files import atomic_write_text
from arib.ground.model import Finding
from arib.reports.markdown import render_markdown
from arib.runs.bench import BenchConfig, run_bench
from arib.runs.results import read_results, validate
from arib.targets.openai_agents.sdk import SQLALCHEMY_SQLITE_FILE, SQLITE_FILE

COMMITTED = sorted((Path(__file__).parent.parent / "results").glob("*-openai-agents-*.json"))


@pytest.fixture(scope="module")
def small_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("results")
    config = BenchConfig(
        lanes=(SQLITE_FILE, SQLALCHEMY_SQLITE_FILE),
        checks=(get_check("ARIB-CONC-003"), get_check("ARIB-REPLAY-001")),
        reruns=1, admission_workers=2, out_dir=out, cache=AdmissionCache(None), quiet=True,
        params={"ARIB-CONC-003": {"trials": 2}, "ARIB-REPLAY-001": {"trials": 1}},
    )
    return run_bench(config)


def test_fresh_result_validates_and_report_is_generated(small_run):
    document = read_results(small_run.json_path)
    verdicts = {(f["invariant_id"], f["target"]): f["verdict"] for f in document["findings"]}
    assert verdicts == {
        ("ARIB-CONC-003", "sqlite-file"): "held",
        ("ARIB-CONC-003", "sqlalchemy-sqlite-file"): "not_applicable",
        ("ARIB-REPLAY-001", "sqlite-file"): "violated",
        ("ARIB-REPLAY-001", "sqlalchemy-sqlite-file"): "violated",
    }
    assert int(small_run.code) == 1
    assert small_run.report_path.read_text() == render_markdown(document)
    assert document["environment"]["packages"]["openai-agents"]
    assert document["parameters"]["checks"]["ARIB-CONC-003"]["trials"] == 2


@pytest.mark.skipif(not COMMITTED, reason="no committed result files yet")
@pytest.mark.parametrize("path", COMMITTED, ids=lambda p: p.name)
def test_committed_results_validate(path):
    document = read_results(path)
    assert document["findings"]


def test_schema_rejects_a_violation_without_replay(small_run):
    document = json.loads(small_run.json_path.read_text())
    bad = next(f for f in document["findings"] if f["verdict"] == "violated")
    bad["replay"] = None
    with pytest.raises(ResultsError, match="fails bench-run.schema.json"):
        validate(document)


def test_foreign_and_corrupt_files_are_named(tmp_path):
    foreign = tmp_path / "foreign.json"
    foreign.write_text('{"kind": "something-else"}')
    with pytest.raises(ResultsError, match="not a bench result"):
        read_results(foreign)
    corrupt = tmp_path / "corrupt.json"
    corrupt.write_text("{not json")
    with pytest.raises(ResultsError, match="cannot read result file"):
        read_results(corrupt)


def test_atomic_write_leaves_old_file_on_failure(tmp_path, monkeypatch):
    target = tmp_path / "r.json"
    atomic_write_text(target, "old")

    def fail(*_args):
        raise OSError("disk full")

    monkeypatch.setattr("os.replace", fail)
    with pytest.raises(OSError):
        atomic_write_text(target, "new")
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["r.json"]


def test_atomic_write_keeps_the_mode_and_makes_new_files_readable(tmp_path):
    fresh = tmp_path / "fresh.json"
    atomic_write_text(fresh, "new")
    assert fresh.stat().st_mode & 0o777 == 0o644  # not mkstemp's 0600
    kept = tmp_path / "kept.json"
    kept.write_text("old")
    kept.chmod(0o640)
    atomic_write_text(kept, "new")
    assert kept.stat().st_mode & 0o777 == 0o640 and kept.read_text() == "new"


def test_a_scheduled_violation_validates_and_its_schedule_is_shown(small_run):
    from arib.execute import RunOptions, run_check
    from arib.ground.child import run_one
    from arib.mutants.registry import get_mutant
    from arib.targets.openai_agents.reference import REFERENCE

    check = get_check("ARIB-CONC-001")
    opts = RunOptions(params=check.resolve_params({"writers": 3, "appends": 3, "trials": 2}))
    mutant = get_mutant("reference_lost_update")
    finding = run_one(lambda: run_check(check, REFERENCE, opts, mutant), 90).value
    assert finding is not None and finding.schedule is not None
    document = json.loads(small_run.json_path.read_text())
    document["findings"].append(finding.to_json())
    validate(document)
    report = render_markdown(document)
    assert f"- schedule: {finding.schedule['strategy']}, " in report
    assert "decisions, all controlled: a replay reproduces it; over 2 trial(s)" in report
    document["findings"][-1]["schedule"]["text"] = "not a schedule"
    with pytest.raises(ResultsError, match="fails bench-run.schema.json"):
        validate(document)


# Every family's runs (COMMITTED is openai-agents' alone).
EVERY_RUN = sorted((Path(__file__).parent.parent / "results").glob("*-*-*.json"))


@pytest.mark.slow
@pytest.mark.parametrize("path", [p for p in EVERY_RUN if p not in COMMITTED],
                         ids=lambda p: p.name)
def test_every_familys_committed_results_validate(path):
    assert read_results(path)["findings"]


def test_committed_findings_read_back_and_a_timeout_is_read_as_it_was_written():
    """Files written before ``timed_out`` existed: a finding without it did not time out, but
    an error finding with the old mark (modes {"timeout": 1}) did, and the mark leaves it. A
    file written since holds the field, and it reads back as written."""
    marked = unmarked = recorded = 0
    for path in EVERY_RUN:
        for written in json.loads(path.read_text(encoding="utf-8"))["findings"]:
            back = Finding.from_json(written)
            assert "timeout" not in back.modes or not back.timed_out
            if "timed_out" in written:
                assert back.timed_out is written["timed_out"], (path.name,
                                                                written["invariant_id"])
                recorded += 1
                continue
            old_mark = written["verdict"] == "error" and "timeout" in written.get("modes", {})
            assert back.timed_out is old_mark, (path.name, written["invariant_id"])
            marked += old_mark
            unmarked += not old_mark
    assert marked and unmarked  # both old readings were exercised on real files


def test_a_timed_out_finding_validates_and_only_as_an_error(small_run):
    document = json.loads(small_run.json_path.read_text())
    held = next(f for f in document["findings"] if f["verdict"] == "held")
    assert held["timed_out"] is False
    held["timed_out"] = True  # a held cell cannot have timed out
    with pytest.raises(ResultsError, match="fails bench-run.schema.json"):
        validate(document)
    held |= {"verdict": "error", "reason": "trial 0 exceeded the check timeout of 1.0s",
             "trials": 0, "violating_trials": 0}
    validate(document)
