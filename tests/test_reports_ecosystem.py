"""arib.reports.ecosystem and its page: the table of third-party lanes beside the family's own,
findings reported only once a direct reproduction reproduced them, bad input named."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from arib.ground.errors import ResultsError, UsageError
from arib.reports.ecosystem import (
    CellState,
    Confirmation,
    build,
    confirm,
    script_key,
)
from arib.runs.results import read_results

ROOT = Path(__file__).resolve().parent.parent


def _finding(check: str, lane: str, verdict: str, trials: int = 4, violating: int = 0,
             **more: Any) -> dict[str, Any]:
    return {"invariant_id": check, "invariant": f"{check} holds", "fault": "a fault",
            "target": lane, "verdict": verdict, "trials": trials,
            "violating_trials": violating, "samples": more.get("samples", []),
            "ops": more.get("ops", []), "replay": more.get("replay"),
            "reason": more.get("reason")}


def _run(version: str, lanes: list[dict[str, Any]], findings: list[dict[str, Any]],
         packages: dict[str, str] | None = None,
         not_measured: list[dict[str, str]] | None = None) -> dict[str, Any]:
    return {"kind": "arib-bench-run", "sdk": {"name": "langgraph", "version": version},
            "environment": {"packages": packages or {}}, "lanes": lanes,
            "findings": findings, "not_measured": not_measured or []}


BUILTIN = _run("cp4", [{"name": "lg-reference", "reference": True}, {"name": "lg-memory"}],
               [_finding("ARIB-CKPT-001", "lg-memory", "held"),
                _finding("ARIB-CKPT-002", "lg-memory", "not_applicable", 0)])
DUCK = _run("cp2", [{"name": "lg-memory"},
                    {"name": "lg-duckdb", "distribution": "langgraph-checkpoint-duckdb"}],
            [_finding("ARIB-CKPT-001", "lg-memory", "held"),
             _finding("ARIB-CKPT-001", "lg-duckdb", "violated", 4, 3, samples=["lost 2"],
                      ops=["put a", "get a"], replay="python -m arib run ..."),
             _finding("ARIB-CKPT-002", "lg-duckdb", "held")],
            packages={"langgraph-checkpoint-duckdb": "2.0.2"})


def test_the_table_puts_third_party_lanes_beside_the_family_s_own():
    eco = build("langgraph", BUILTIN, [DUCK], names=["base.json", "duck.json"])
    # the family's own lanes from the builtin run only, the third-party lane from its own
    assert [(c.lane, c.version, c.third_party) for c in eco.columns] == [
        ("lg-memory", "cp4", False), ("lg-duckdb", "cp2", True)]
    assert eco.columns[1].distribution_version == "2.0.2"
    assert list(eco.invariants) == ["ARIB-CKPT-001", "ARIB-CKPT-002"]
    assert eco.cell("ARIB-CKPT-001", "lg-duckdb").label() == "**violated 3/4**"
    assert eco.cell("ARIB-CKPT-002", "lg-memory").state is CellState.NOT_APPLICABLE
    assert eco.cell("ARIB-CKPT-003", "lg-duckdb").state is CellState.NOT_MEASURED
    (found,) = eco.findings
    assert (found.key, found.rate) == ("ARIB-CKPT-001 on lg-duckdb", 0.75)
    assert not found.reported  # no reproduction yet: not a finding
    page = eco.markdown()
    assert "| ARIB-CKPT-001 | held 0/4 | **violated 3/4** |" in page
    assert "## Findings (0)" in page and "## Violations not confirmed (1)" in page
    assert "no reproduction script" in page
    json.dumps(eco.to_json())  # serialisable


def test_a_violation_is_a_finding_only_once_reproduced_without_the_harness():
    said = {"ARIB-CKPT-001 on lg-duckdb": Confirmation("lg-duckdb--ARIB-CKPT-001.py", 1,
                                                       "reproduced: lost 2 of 4 writes\n")}
    eco = build("langgraph", BUILTIN, [DUCK], said)
    (found,) = eco.findings
    assert found.reported
    page = eco.markdown()
    assert "## Findings (1)" in page and "Violations not confirmed" not in page
    for words in ("langgraph-checkpoint-duckdb 2.0.2: ARIB-CKPT-001 violated on `lg-duckdb`",
                  "3 of 4 trials violated it", "- lost 2", "put a\nget a",
                  "python -m arib run ...", "reproduced: lost 2 of 4 writes"):
        assert words in page, words
    not_again = {"ARIB-CKPT-001 on lg-duckdb": Confirmation("x.py", 0, "held")}
    assert not build("langgraph", BUILTIN, [DUCK], not_again).findings[0].reported


def test_bad_runs_are_refused_naming_them(tmp_path: Path):
    other = {**DUCK, "sdk": {"name": "openai-agents", "version": "0.24.0"}}
    with pytest.raises(UsageError, match="'o.json' is a run of family 'openai-agents'"):
        build("langgraph", BUILTIN, [other], names=["b.json", "o.json"])
    with pytest.raises(UsageError, match="'b2.json' has no third-party lane"):
        build("langgraph", BUILTIN, [BUILTIN], names=["b.json", "b2.json"])
    bad = tmp_path / "notes.json"
    bad.write_text('{"kind": "something"}')
    with pytest.raises(ResultsError, match="notes.json' is not a bench result"):
        read_results(bad)


def test_reproduction_scripts_are_run_and_named_by_lane_and_check(tmp_path: Path):
    yes = tmp_path / "lg-duckdb--ARIB-CKPT-001.py"
    yes.write_text("print('lost 2 of 4')\nraise SystemExit(1)\n")
    no = tmp_path / "lg-lmdb--ARIB-CKPT-002.py"
    no.write_text("print('every write read back')\n")
    said = confirm([yes, no])
    assert said["ARIB-CKPT-001 on lg-duckdb"].reproduced
    assert "lost 2 of 4" in said["ARIB-CKPT-001 on lg-duckdb"].output
    assert not said["ARIB-CKPT-002 on lg-lmdb"].reproduced
    with pytest.raises(UsageError, match="'repro.py': the rule: it is named <lane>--"):
        script_key(Path("repro.py"))


def as_written(doc: dict[str, Any]) -> dict[str, Any]:
    """A synthetic run as `bench` would write it: the fields it leaves out taken from a real
    run (the accepted baseline of the pinned LangGraph combination), so that it passes the
    result schema the command reads runs with."""
    real = read_results(next((ROOT / "results" / "baselines").glob("langgraph-*.json")))
    template = real["findings"][0]
    return {**real, **doc, "findings": [{**template, **f} for f in doc["findings"]],
            "environment": {**real["environment"], **doc["environment"]}}


def test_the_command_writes_page_and_json_and_fails_when_nothing_third_party_ran(
        tmp_path: Path):
    base, duck = tmp_path / "base.json", tmp_path / "duck.json"
    base.write_text(json.dumps(as_written(BUILTIN)))
    absent = _run("cp2", [{"name": "lg-duckdb", "distribution": "langgraph-checkpoint-duckdb"}],
                  [], not_measured=[{"name": "lg-duckdb", "reason": "not measured, because "
                                                                    "it is not installed"}])
    for doc, code in ((DUCK, 0), (absent, 4)):
        duck.write_text(json.dumps(as_written(doc)))
        done = subprocess.run(
            [sys.executable, "-m", "arib", "--family", "langgraph", "ecosystem", "report",
             "--builtin", str(base), "--runs", str(duck), "--out", str(tmp_path / "out")],
            capture_output=True, text=True, timeout=120, cwd=ROOT)
        assert done.returncode == code, done.stdout + done.stderr
    page = (tmp_path / "out" / "langgraph.md").read_text()
    assert "not measured, because it is not installed" in page
    assert json.loads((tmp_path / "out" / "langgraph.json").read_text())["kind"] == (
        "arib-ecosystem")


def test_the_survey_and_the_official_suite_beside_a_run_join_its_third_party_lanes(
        tmp_path: Path):
    run = tmp_path / "lg-duckdb" / "2026-12-06T100000Z-a1-langgraph-cp2.json"
    (run.parent / "survey").mkdir(parents=True)
    (run.parent / "official").mkdir()
    run.write_text(json.dumps(DUCK))
    (run.parent / "survey" / "lg-duckdb.json").write_text(json.dumps(
        {"module": "langgraph.checkpoint.duckdb", "error": None,
         "scores": {"mutants": 12, "killed": 6, "survived": 2, "no_coverage": 4,
                    "score_covered": 0.75}}))
    (run.parent / "survey" / "lg-duckdb[Base].json").write_text(json.dumps(  # a named class
        {"module": "langgraph.checkpoint.duckdb.base", "error": None,
         "scores": {"mutants": 8, "killed": 3, "survived": 1, "no_coverage": 4,
                    "score_covered": 0.75}}))
    (run.parent / "official" / "langgraph-cp2-side-by-side.json").write_text(json.dumps(
        {"suite": "langgraph-checkpoint-conformance", "suite_version": "0.0.2", "lanes": [
            {"lane": "lg-duckdb", "official": {"status": "failed", "passed": 47, "failed": 1,
                                               "failing": ["list/test_filter"]}}]}))
    (run.parent / "parity.json").write_text(json.dumps(
        {"reference_lane": "lg-reference@asyncio", "lanes": [
            {"target": "lg-duckdb", "verdict": "violated", "workflows_total": 10}],
         "fail_reasons": ["workflow 'graph_fork': lane 'lg-duckdb@asyncio' parity hash ..."]}))
    (run.parent / "reruns").mkdir()
    # this run's reruns, then an earlier session's and a later bench's (theirs, not this one's)
    (run.parent / "2026-12-06T120000Z-b2-langgraph-cp2.json").write_text(json.dumps(DUCK))
    for stamp, violating in (("2026-12-06T100100Z", 4), ("2026-12-06T100200Z", 0),
                             ("2026-12-05T100100Z", 3), ("2026-12-06T120100Z", 1)):
        (run.parent / "reruns" / f"{stamp}-r-langgraph-cp2.json").write_text(json.dumps(_run(
            "cp2", DUCK["lanes"], [_finding("ARIB-CKPT-001", "lg-duckdb",
                                            "violated" if violating else "held", 4, violating)])))
    said = {"ARIB-CKPT-001 on lg-duckdb": Confirmation("s.py", 1, "seen")}
    eco = build("langgraph", BUILTIN, [DUCK], said, names=["b.json", "duck.json"],
                paths=[None, run])
    assert eco.findings[0].reruns == ((4, 4), (0, 4))
    duck = next(c for c in eco.columns if c.lane == "lg-duckdb")
    assert duck.survey is not None and duck.survey["killed"] == 9
    assert duck.official is not None and duck.official["failing"] == ["list/test_filter"]
    page = eco.markdown()
    assert ("| `lg-duckdb` | 75.0% of covered (20 mutants of `langgraph.checkpoint.duckdb, "
            "langgraph.checkpoint.duckdb.base`: "
            "killed 9, survived 3, no_coverage 8) | violated against `lg-reference@asyncio` "
            "(10 workflows): differs in `graph_fork` | failed: 47 passed, 1 failed "
            "(`list/test_filter`) |") in page
    assert next(c for c in eco.columns if c.lane == "lg-memory").survey is None  # own lanes
    assert ("Benched again under 2 other run seed(s), the clean lane violates it in 2 of 3 "
            "runs: 7 of 12 trials, a rate of 0.58 per trial.") in page


def test_a_violation_the_family_s_own_lanes_show_too_at_that_version_says_so():
    at_cp2 = _run("cp2", [{"name": "lg-memory"}, {"name": "lg-sqlite"},
                          {"name": "lg-other", "distribution": "another-package"}],
                  [_finding("ARIB-CKPT-001", "lg-memory", "violated", 4, 2),
                   _finding("ARIB-CKPT-001", "lg-sqlite", "held"),
                   _finding("ARIB-CKPT-001", "lg-other", "violated", 4, 4)])
    eco = build("langgraph", BUILTIN, [DUCK], baselines={"cp2": at_cp2})
    (found,) = eco.findings
    # only the family's own lanes that violate it at the finding's version, never a plugin's
    assert found.own_too == ("lg-memory",)
    assert found.to_json()["own_lanes_violated_too"] == ["lg-memory"]
    assert ("; the family's own `lg-memory` violates it too on cp2 (its accepted baseline)"
            in eco.markdown())
    # another version's baseline says nothing of this one
    assert build("langgraph", BUILTIN, [DUCK], baselines={"cp4": at_cp2}).findings[0].own_too \
        == ()
    said = {"ARIB-CKPT-001 on lg-duckdb": Confirmation("s.py", 1, "seen\n")}
    page = build("langgraph", BUILTIN, [DUCK], said, baselines={"cp2": at_cp2}).markdown()
    assert "**The family's own lanes.** `lg-memory` violates it too on cp2" in page
