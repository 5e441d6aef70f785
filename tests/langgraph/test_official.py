"""The official conformance suite beside ours: its reference run, its check, the comparison."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import pytest

from arib.checks.langgraph._official import OFFICIAL_ID, official_check
from arib.cli.main import main
from arib.execute import RunOptions, run_check
from arib.ground.child import ChildStatus, run_jobs
from arib.ground.errors import UnknownNameError
from arib.ground.model import ExitCode, MutantStatus, Verdict
from arib.mutants.base import MutantSpec
from arib.mutants.registry import forced_broken, get_mutant
from arib.official.command import suite_lanes
from arib.official.mutants import LaneSides, MutantComparison, MutantSides, Side
from arib.official.side import SideBySide, our_sides
from arib.official.suite import active_suite
from arib.targets.langgraph.lanes import MEMORY, REFERENCE, SQLITE_FILE
from arib.targets.langgraph.official.suite import (
    BASE,
    METHODS,
    Bridge,
    OfficialRun,
    SuiteStatus,
    exception_line,
    reference_runs,
    run_suite,
    thread_bridge,
)


@pytest.fixture(scope="module")
def clean_runs() -> dict[str, OfficialRun]:
    runs = reference_runs((REFERENCE, MEMORY, SQLITE_FILE), {}, version="v", workers=1)
    return {run.lane: run for run in runs}


@pytest.mark.parametrize("lane", [REFERENCE.name, MEMORY.name])
def test_the_reference_run_reports_every_capability_and_test(
        clean_runs: dict[str, OfficialRun], lane: str) -> None:
    run = clean_runs[lane]
    assert run.status is SuiteStatus.PASSED, run.error or sorted(run.failing)
    assert run.bridge is Bridge.NATIVE
    assert [c.capability for c in run.capabilities] == list(METHODS)
    detected = {c.capability for c in run.capabilities if c.detected}
    assert BASE <= detected
    for cap in run.capabilities:
        tests = [t for t in run.tests if t.capability == cap.capability]
        assert cap.passed == len(tests) and cap.failed == 0 and cap.failing == ()
        assert cap.skipped == (0 if cap.detected else 1)
        assert bool(tests) == cap.detected
    assert run.passed == len(run.tests) >= 50 and run.failed == 0
    assert len({t.key for t in run.tests}) == len(run.tests)  # names are unique
    document = json.loads(json.dumps(run.to_json()))
    assert document["lane"] == lane and document["suite_version"] == "0.0.2"
    assert document["conformance_level"] == "FULL" and document["failing"] == []
    assert sum(c["passed"] for c in document["capabilities"]) == document["passed"]


def test_a_sync_only_saver_is_bridged_with_only_the_capabilities_its_class_has(
        clean_runs: dict[str, OfficialRun], tmp_path: Path) -> None:
    import sqlite3

    from langgraph.checkpoint.conformance.capabilities import DetectedCapabilities
    from langgraph.checkpoint.sqlite import SqliteSaver

    run = clean_runs[SQLITE_FILE.name]
    assert run.bridge is Bridge.THREAD and run.status is SuiteStatus.PASSED
    saver = SqliteSaver(sqlite3.connect(tmp_path / "x.db", check_same_thread=False))
    bridged = DetectedCapabilities.from_instance(thread_bridge(saver)).detected
    raw = DetectedCapabilities.from_instance(saver).detected
    assert {c.value for c in bridged} == {c.capability for c in run.capabilities
                                          if c.detected} == BASE
    # Unbridged, the suite would call async methods that SqliteSaver makes raise.
    assert {c.value for c in raw} != {c.value for c in bridged}


def _judge(baseline: dict[str, frozenset[str]], mutant: MutantSpec | None) -> Verdict:
    check = official_check(baseline, timeout_s=60.0)
    job = functools.partial(run_check, check, REFERENCE,
                            RunOptions(params=check.resolve_params()), mutant)
    outcome = run_jobs([job], workers=1, timeout_s=90.0)[0]
    assert outcome.status is ChildStatus.OK, outcome.detail
    return outcome.value.verdict  # type: ignore[no-any-return]


def test_the_official_check_kills_the_forced_broken_saver_and_holds_on_the_clean_one(
        clean_runs: dict[str, OfficialRun]) -> None:
    baseline = {REFERENCE.name: clean_runs[REFERENCE.name].failing}
    assert _judge(baseline, None) is Verdict.HELD
    assert _judge(baseline, forced_broken()) is Verdict.VIOLATED


def test_a_test_that_fails_on_the_clean_saver_kills_nothing(
        clean_runs: dict[str, OfficialRun]) -> None:
    every = frozenset(t.key for t in clean_runs[REFERENCE.name].tests)
    assert _judge({REFERENCE.name: every}, forced_broken()) is Verdict.HELD


def test_a_lane_with_no_clean_run_is_an_error_not_a_verdict() -> None:
    assert _judge({}, None) is Verdict.ERROR


def test_who_kills_a_mutant() -> None:
    m = get_mutant("lg_reference_drops_metadata")
    k, s, n = MutantStatus.KILLED, MutantStatus.SURVIVED, MutantStatus.NO_COVERAGE
    assert MutantSides("l", m, {"ARIB-CKPT-001": k}, k).side is Side.BOTH
    assert MutantSides("l", m, {"ARIB-CKPT-001": n, "ARIB-CKPT-002": k}, s).side is Side.OURS
    assert MutantSides("l", m, {"ARIB-CKPT-001": n}, k).side is Side.OFFICIAL
    assert MutantSides("l", m, {"ARIB-CKPT-001": s}, None).side is Side.NEITHER
    assert OFFICIAL_ID not in MutantSides("l", m, {}, s).to_json()["ours"]


def test_a_lane_that_is_not_a_checkpointer_is_refused_by_name() -> None:
    with pytest.raises(UnknownNameError, match="'lg-nope'.*lg-memory"):
        suite_lanes("lg-memory,lg-nope")
    assert suite_lanes("lg-memory") == (MEMORY,)


def test_our_side_without_a_bench_result_names_the_command(tmp_path: Path) -> None:
    side = our_sides(["lg-memory"], tmp_path, "cp1+sq2+pg3")[0]
    assert side.source is None and "bench --out" in side.summary()


def test_the_command_writes_its_table_and_exits_0(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["--family", "langgraph", "official", "--lanes", "lg-memory", "--out",
                 str(tmp_path), "--workers", "1"])
    assert code == ExitCode.OK
    [written] = (tmp_path / "official").glob("*-side-by-side.json")
    document = json.loads(written.read_text())
    assert [lane["lane"] for lane in document["lanes"]] == ["lg-memory"]
    assert document["lanes"][0]["official"]["status"] == "passed"
    assert document["lanes"][0]["ours"]["source"] is None
    assert "| lg-memory | native | FULL | 58 | 0 |" in capsys.readouterr().out
    assert main(["--family", "langgraph", "official", "--lanes", "sqlite-file", "--out",
                 str(tmp_path)]) == ExitCode.USAGE


def test_a_failure_is_shown_by_its_exception_line() -> None:
    trace = ('Traceback (most recent call last):\n  File "x.py", line 1, in f\n    g()\n'
             '  File "y.py", line 2, in g\n    raise E\npsycopg.errors.UndefinedColumn: column'
             ' "x" does not exist\nLINE 1: SELECT x\nHINT:  Perhaps you meant "y".\n')
    assert exception_line(trace) == 'psycopg.errors.UndefinedColumn: column "x" does not exist'
    assert exception_line("Traceback ...\n  File \"x\", line 1\n    assert a\nAssertionError\n"
                          ) == "AssertionError"
    assert exception_line(None) is None


def test_a_side_that_judges_nothing_on_a_lane_has_no_score_there() -> None:
    m = get_mutant("lg_reference_drops_metadata")
    k, s = MutantStatus.KILLED, MutantStatus.NOT_JUDGEABLE
    rows = (MutantSides("a", m, {"ARIB-CKPT-001": s}, k),)
    blind = LaneSides("a", 1, {}, rows, {}, None, {"official": True, "ours": False})
    seen = LaneSides("b", 1, {}, (MutantSides("b", m, {"ARIB-CKPT-001": k}, k),), {})
    assert blind.scores() == {"official": 1.0, "ours": None, "union": None}
    assert seen.scores() == {"official": 1.0, "ours": 1.0, "union": 1.0}
    both = MutantComparison("langgraph", active_suite()[1], "v", "0.0.2", ("ARIB-CKPT-001",),
                            (blind, seen), {}, {}, 0.0)
    totals = both.totals()
    assert totals["lanes"] == ["b"] and totals["left_out"] == ["a"] and totals["judged"] == 1
    assert "| a | 1 | 1 | 0 | 0 | 1 | 0 | 100.0% | not judgeable |" in both.markdown()


def test_the_tables_name_the_suite_they_were_made_with_whatever_family_is_active(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import dataclasses

    m = get_mutant("lg_reference_drops_metadata")
    k, s = MutantStatus.KILLED, MutantStatus.SURVIVED
    suite = dataclasses.replace(active_suite()[1], name="their-suite", check_id="THEIR-001")
    lane = LaneSides("a", 1, {}, (MutantSides("a", m, {"ARIB-CKPT-001": s}, k),), {})
    # the default family has no official suite: a table that looked it up would raise
    monkeypatch.setenv("ARIB_FAMILY", "openai-agents")
    comparison = MutantComparison("theirs", suite, "v", "0.0.2", ("ARIB-CKPT-001",), (lane,),
                                  {}, {}, 0.0)
    document = comparison.to_json()
    assert document["suite"] == "their-suite" and document["official_check"] == "THEIR-001"
    text = comparison.markdown()
    assert text.startswith("# their-suite 0.0.2 against our checks on the same mutants, "
                           "theirs v\n")
    assert "ours ARIB-CKPT-001 survived, official killed" in text
    assert f"`python -m arib --family theirs show {m.id} --lane a`" in text
    side = SideBySide("theirs", suite, "v", "0.0.2", (), (), {"lg-postgres": "no server"})
    assert side.to_json()["suite"] == "their-suite"
    assert side.markdown().startswith("# their-suite 0.0.2 beside our checks, theirs v\n")
    assert "| lg-postgres | - | not measured |" in side.markdown()


def test_a_parameter_without_the_mutant_survey_is_refused(tmp_path: Path) -> None:
    assert main(["--family", "langgraph", "official", "--lanes", "lg-memory", "--out",
                 str(tmp_path), "--param", "ARIB-CKPT-001.steps=3"]) == ExitCode.USAGE
    assert not (tmp_path / "official").exists() or not any((tmp_path / "official").iterdir())


@pytest.mark.slow
def test_the_comparison_on_the_mutants_of_a_lane(tmp_path: Path) -> None:
    code = main(["--family", "langgraph", "official", "--lanes", "lg-memory", "--out",
                 str(tmp_path), "--mutants", "--no-cache", "--quiet"])
    assert code == ExitCode.OK
    [written] = (tmp_path / "official").glob("*-mutants.json")
    document = json.loads(written.read_text())
    [lane] = document["lanes"]
    assert lane["lane"] == "lg-memory" and lane["comparable"] and lane["error"] is None
    assert lane["judged"] == lane["mutants"] - sum(lane["set_aside"].values()) > 0
    assert sum(lane["counts"].values()) == lane["judged"] == len(lane["rows"])
    assert "held, held, held" in lane["clean"][OFFICIAL_ID]
    kills = [r for r in lane["rows"] if r["official"] == "killed"]
    assert kills and all(r["side"] in ("both", "official_only") for r in kills)
    assert document["totals"]["scores"]["official"] == round(len(kills) / lane["judged"], 4)


def test_a_run_stops_at_the_first_test_stop_at_names(tmp_path: Path,
                                                     clean_runs: dict[str, OfficialRun]) -> None:
    import anyio

    chosen = clean_runs[MEMORY.name].tests[20]
    run = anyio.run(functools.partial(run_suite, MEMORY, tmp_path, {}, "v",
                                      stop_at=lambda t: t.key == chosen.key))
    assert run.stopped_at == chosen.key and run.status is SuiteStatus.FAILED
    assert [t.key for t in run.tests] == [t.key for t in clean_runs[MEMORY.name].tests[:21]]
    assert run.capabilities == () and run.to_json()["stopped_at"] == chosen.key


def test_a_flaky_pair_is_no_kill_and_shows_its_rate() -> None:
    from arib.ground.model import CleanBase, MutantKind, MutantResult
    from arib.official.mutants import lane_sides
    from arib.survey.lane import LaneSurvey, MutantOutcome

    m = get_mutant("lg_reference_drops_metadata")
    flaky, k = MutantStatus.FLAKY, MutantStatus.KILLED
    v, held = Verdict.VIOLATED, Verdict.HELD
    results = (MutantResult("ARIB-CKPT-001", m.id, MutantKind.HANDWRITTEN, "a", "d", flaky,
                            (v, held, v)),
               MutantResult(OFFICIAL_ID, m.id, MutantKind.HANDWRITTEN, "a", "d", flaky,
                            (v, held, held)))
    outcome = MutantOutcome(m, flaky, "flaky", frozenset({1}),
                            {"ARIB-CKPT-001": flaky, OFFICIAL_ID: flaky})
    base = CleanBase("ARIB-CKPT-001", "a", (held,) * 3, 0.1)
    survey = LaneSurvey("a", "mod", "f", (outcome,), 0,
                        {"ARIB-CKPT-001": base, OFFICIAL_ID: base}, {}, frozenset(), results, {})
    sides = lane_sides(survey)
    [row] = sides.rows
    assert row.rates == {"ARIB-CKPT-001": "2/3", OFFICIAL_ID: "1/3"}
    assert row.side is Side.NEITHER and sides.scores()["ours"] == 0.0
    assert sides.to_json()["mutant_ids"] == [m.id]
    assert row.to_json()["flaky_rates"] == {"ARIB-CKPT-001": "2/3", OFFICIAL_ID: "1/3"}
    table = MutantComparison("langgraph", active_suite()[1], "v", "0.0.2", ("ARIB-CKPT-001",),
                             (sides,), {"kill_reruns": 3}, {}, 0.0).markdown()
    assert "violated in every rerun, 3 at least" in table
    assert "ours ARIB-CKPT-001 flaky 2/3, official flaky 1/3" in table
    killed = MutantSides("a", m, {"ARIB-CKPT-001": k}, k)
    assert killed.shown("ARIB-CKPT-001", k) == "killed" and killed.shown("x", None) == "n/a"


ROOT = Path(__file__).resolve().parents[2]
TABLES = sorted((ROOT / "results" / "official").glob("langgraph-*-mutants.json"))
GENERATED = """
import json, sys
from arib.mutants.generate import generate
from arib.targets.registry import get_target
print(json.dumps({lane: sorted(m.id for m in generate(get_target(lane)).mutants)
                  for lane in sys.argv[1:]}))
"""


def _generated_today(version: str, lanes: list[str]) -> dict[str, list[str]]:
    """Each lane's mutant ids as today's generator makes them from ``version``'s release
    (here, or in that version's environment under .nox/sdk-envs/)."""
    import os
    import subprocess
    import sys

    from arib.dev.noxsupport import sdk_env_dir
    from arib.execute import sdk_version

    python = sys.executable if version == sdk_version() else str(
        sdk_env_dir(ROOT, f"langgraph-{version}", "3.12") / "bin" / "python")
    assert Path(python).exists(), (f"no environment of langgraph {version} to generate its "
                                   f"mutants in: `nox -s langgraph` builds every lock's")
    done = subprocess.run([python, "-c", GENERATED, *lanes], cwd=ROOT, capture_output=True,
                          text=True, check=True, env={**os.environ, "ARIB_FAMILY": "langgraph"})
    return json.loads(done.stdout)  # type: ignore[no-any-return]


@pytest.mark.parametrize("table", TABLES, ids=[t.name for t in TABLES])
def test_a_committed_table_names_the_mutants_today_s_generator_makes(table: Path) -> None:
    document = json.loads(table.read_text())
    lanes = [lane for lane in document["lanes"] if lane["error"] is None]
    today = _generated_today(document["version"], [lane["lane"] for lane in lanes])
    stale = []
    for lane in lanes:
        made = set(today[lane["lane"]])
        named = {row["id"] for row in lane["rows"]} | set(lane.get("mutant_ids", ()))
        gone = sorted(named - made)
        if gone or lane["mutants"] != len(made) or (
                "mutant_ids" in lane and set(lane["mutant_ids"]) != made):
            stale.append(f"{lane['lane']}: the table has {lane['mutants']} mutants, today's "
                         f"generator makes {len(made)}" + (
                             f"; no longer generated: {', '.join(gone)}" if gone else ""))
    assert not stale, (f"{table.name} names mutant sets today's generator no longer makes; "
                       f"regenerate it with `python -m arib --family langgraph official "
                       f"--mutants`:\n" + "\n".join(stale))
