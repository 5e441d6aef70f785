"""Run coverage, the regression gate and accept: measured cells compared, nothing overwritten."""

from __future__ import annotations

import copy
import fcntl
import json
import shutil
import threading
import time
from pathlib import Path

import pytest

from arib.caches.verdicts import AdmissionCache
from arib.checks.registry import get_check
from arib.cli.main import main
from arib.execute import sdk_version
from arib.ground.errors import ResultsError, UsageError
from arib.ground.files import atomic_write_text, folder_lock
from arib.ground.keys import Cell
from arib.ground.model import ExitCode
from arib.ground.services import ServiceManager
from arib.runs.baseline import (
    accept,
    baseline_gaps,
    baseline_path,
    latest_run,
    merge,
    newest_whole_runs,
)
from arib.runs.bench import BenchConfig, BenchInterrupted, result_paths, run_bench
from arib.runs.compare import ChangeKind, gate
from arib.runs.coverage import (
    INTERRUPTED,
    NOT_SELECTED_CHECK,
    NOT_SELECTED_LANE,
    coverage_of,
    known_selection,
)
from arib.runs.results import read_results, run_glob, validate
from arib.targets.openai_agents.sdk import SQLALCHEMY_SQLITE_FILE, SQLITE_FILE
from arib.targets.openai_agents.services import REDIS_FROM_URL

ROOT = Path(__file__).parent.parent
LEGACY = ROOT / "results" / "2026-11-29-openai-agents-0.24.0.json"
REPLAY = "ARIB-REPLAY-001"
QUICK = {REPLAY: {"trials": 1}}


def small_config(out: Path, lanes, **extra) -> BenchConfig:
    return BenchConfig(lanes=lanes, checks=(get_check(REPLAY),), reruns=1, out_dir=out,
                       cache=AdmissionCache(None), quiet=True, params=QUICK, generated=False,
                       **extra)


@pytest.fixture(scope="module")
def no_redis_run(tmp_path_factory):
    """A real run of sqlite-file and redis-from-url where redis-server cannot be found."""
    out = tmp_path_factory.mktemp("results")
    missing = {"redis": str(out / "no-such-redis-server")}
    with ServiceManager(binaries=missing, environ={}) as manager:
        outcome = run_bench(small_config(out, (SQLITE_FILE, REDIS_FROM_URL), manager=manager))
    return outcome


def with_cells(document, *cells, verdict="held"):
    """A copy of ``document`` with more findings, made from its first one."""
    out = copy.deepcopy(document)
    for check, lane in cells:
        finding = {**copy.deepcopy(document["findings"][0]), "invariant_id": check,
                   "target": lane, "verdict": verdict, "violating_trials": 0, "replay": None}
        out["findings"].append(finding)
    return out


def write(path: Path, document) -> Path:
    atomic_write_text(path, json.dumps(document))
    return path


def test_the_document_records_what_the_run_covered(no_redis_run):
    document = read_results(no_redis_run.json_path)  # validates against the schema
    coverage = coverage_of(document)
    assert coverage.lanes_selected == ("sqlite-file", "redis-from-url")
    assert coverage.lanes_measured == ("sqlite-file",)
    assert "redis-server not found" in coverage.lanes_not_measured["redis-from-url"]
    assert coverage.checks_selected == (REPLAY,) and coverage.checks_admitted == (REPLAY,)
    assert coverage.checks_not_measured == {}
    assert coverage.partial and not coverage.every_lane and not coverage.every_check
    assert document["coverage"]["partial"] is True
    assert len(document["run_id"]) == 8 and document["run_id"] in no_redis_run.json_path.name


def test_gate_compares_only_measured_cells_and_says_why_not_the_others(no_redis_run):
    run = no_redis_run.document
    baseline = with_cells(run, (REPLAY, "redis-from-url"), (REPLAY, "async-sqlite-file"),
                          ("ARIB-CONC-001", "sqlite-file"))
    result = gate(baseline, run)
    assert result.changes == () and result.compared == 1
    reasons = {reason: cells for reason, cells in result.not_compared.items()}
    redis_reason = next(r for r in reasons if "redis-server not found" in r)
    assert reasons[redis_reason] == (Cell(REPLAY, "redis-from-url"),)
    assert reasons[NOT_SELECTED_LANE] == (Cell(REPLAY, "async-sqlite-file"),)
    assert reasons[NOT_SELECTED_CHECK] == (Cell("ARIB-CONC-001", "sqlite-file"),)


def test_a_cell_the_run_should_have_measured_is_still_gone(no_redis_run):
    run = copy.deepcopy(no_redis_run.document)
    baseline = no_redis_run.document
    run["findings"] = []  # its lane measured, its check selected, and no finding: gone
    (change,) = gate(baseline, run).changes
    assert (change.check, change.lane, change.kind) == (REPLAY, "sqlite-file", ChangeKind.GONE)
    run["coverage"]["complete"] = False  # ... unless the run was interrupted before it
    result = gate(baseline, run)
    assert result.changes == () and result.not_compared == {INTERRUPTED: (Cell(
        REPLAY, "sqlite-file"),)}


def test_accept_refuses_a_partial_run_then_updates_only_its_cells(no_redis_run, tmp_path):
    run = no_redis_run.document
    others = [(c, lane) for c in ("ARIB-CONC-001", "ARIB-POP-001")
              for lane in ("sqlite-file", "async-sqlite-file", "redis-from-url")]
    old = with_cells(run, *others)
    old["findings"][0].update(verdict="held", violating_trials=0, replay=None)
    write(baseline_path(tmp_path, "0.24.0"), old)
    with pytest.raises(UsageError, match="is a partial run"):
        accept(no_redis_run.json_path, tmp_path)
    assert read_results(baseline_path(tmp_path, "0.24.0")) == old  # untouched
    done = accept(no_redis_run.json_path, tmp_path, partial=True)
    assert (done.updated, done.kept, done.removed) == (1, len(others), 0)
    new = read_results(done.path)
    assert len(new["findings"]) == len(old["findings"]) == 1 + len(others)
    cells = {(f["invariant_id"], f["target"]): f["verdict"] for f in new["findings"]}
    assert cells[(REPLAY, "sqlite-file")] == "violated"  # the measured cell was updated
    assert all(cells[c] == "held" for c in others)  # the others kept as they were
    assert new["accepted"]["partial"] is True and new["accepted"]["updated"] == 1


def test_accept_of_a_partial_run_with_no_baseline_says_it_creates_one(no_redis_run, tmp_path):
    done = accept(no_redis_run.json_path, tmp_path, partial=True)
    assert done.created and done.partial
    line = done.describe()
    assert "created, there was no baseline of this version: 1 cell(s) from the run" in line
    assert "only those: the run is partial" in line
    assert read_results(done.path)["accepted"]["created"] is True
    again = accept(no_redis_run.json_path, tmp_path, partial=True)
    assert not again.created and "created" not in again.describe()
    assert read_results(again.path)["accepted"]["created"] is False


def test_a_partial_accept_keeps_the_record_of_the_checks_it_did_not_run(no_redis_run):
    # A whole baseline of REPLAY and CONC-001; a run of REPLAY alone is accepted into it. The
    # merged baseline still records CONC-001 as a check admitted there (its definition and
    # admission row too), so its kept cells stay accounted for and it stays whole.
    run = no_redis_run.document
    old = with_cells(run, ("ARIB-CONC-001", "sqlite-file"))
    conc = {**copy.deepcopy(run["checks"][0]), "id": "ARIB-CONC-001"}
    old["checks"] = [*run["checks"], conc]
    old["admission"] = [*run["admission"],
                        {**copy.deepcopy(run["admission"][0]), "check_id": "ARIB-CONC-001"}]
    old["coverage"] = {**run["coverage"], "checks_selected": [REPLAY, "ARIB-CONC-001"],
                       "checks_admitted": [REPLAY, "ARIB-CONC-001"], "every_check": True}
    merged = merge(old, run, "x.json")
    coverage = coverage_of(merged)
    assert set(coverage.checks_admitted) == {REPLAY, "ARIB-CONC-001"}
    assert coverage.every_check and coverage.lanes_measured == ("sqlite-file",)
    assert [c["id"] for c in merged["checks"]] == ["ARIB-CONC-001", REPLAY]
    assert [a["check_id"] for a in merged["admission"]] == ["ARIB-CONC-001", REPLAY]
    assert baseline_gaps(merged, None, merged["checks"]) == []
    # Before, the merged baseline recorded the run's checks only: CONC-001 "was no check".
    alone = {**merged, "checks": run["checks"], "coverage": run["coverage"]}
    assert any("ARIB-CONC-001 was no check" in line
               for line in baseline_gaps(alone, None, merged["checks"]))
    validate(merged)


def test_accept_of_a_whole_run_keeps_unmeasured_lanes_and_drops_what_no_longer_exists(
        no_redis_run, tmp_path):
    run = copy.deepcopy(no_redis_run.document)
    run["coverage"].update(every_lane=True, every_check=True, partial=False)
    path = write(tmp_path / "2026-12-01T000000Z-0000abcd-openai-agents-0.24.0.json", run)
    old = with_cells(run, (REPLAY, "redis-from-url"), (REPLAY, "retired-lane"),
                     ("ARIB-OLD-001", "sqlite-file"))
    write(baseline_path(tmp_path, "0.24.0"), old)
    done = accept(path, tmp_path)
    cells = {(f["invariant_id"], f["target"]) for f in read_results(done.path)["findings"]}
    assert cells == {(REPLAY, "sqlite-file"), (REPLAY, "redis-from-url")}
    assert (done.updated, done.kept, done.removed) == (1, 1, 2)


def test_merge_keeps_nothing_of_a_cell_that_is_gone_for_real(no_redis_run):
    run = copy.deepcopy(no_redis_run.document)
    run["findings"] = []
    merged = merge(no_redis_run.document, run, "x.json")
    assert merged["findings"] == [] and merged["accepted"]["removed"] == 1
    validate(merged)


def test_accept_waits_for_the_lock_and_writes_atomically(no_redis_run, tmp_path, monkeypatch):
    target = baseline_path(tmp_path, "0.24.0")
    asking = threading.Event()
    real_flock = fcntl.flock

    def flock(fd, operation):
        if operation == fcntl.LOCK_EX and threading.current_thread() is not main_thread:
            asking.set()
        return real_flock(fd, operation)

    main_thread = threading.current_thread()
    monkeypatch.setattr(fcntl, "flock", flock)
    done = []
    with folder_lock(target.parent):  # another run holds the lock ...
        worker = threading.Thread(target=lambda: done.append(
            accept(no_redis_run.json_path, tmp_path, partial=True)))
        worker.start()
        assert asking.wait(timeout=60)
        time.sleep(0.3)
        assert worker.is_alive() and not target.exists()  # ... so accept waits for it
    worker.join(timeout=60)
    assert done and read_results(target)["accepted"]["updated"] == 1

    before = target.read_text()

    def fail(*_args):
        raise OSError("disk full")

    monkeypatch.setattr("os.replace", fail)
    with pytest.raises(OSError):
        accept(no_redis_run.json_path, tmp_path, partial=True)
    assert target.read_text() == before
    assert sorted(p.name for p in target.parent.iterdir()) == [".arib.lock", target.name]


def test_result_files_are_named_by_time_and_run_id_and_never_overwritten(no_redis_run):
    started = no_redis_run.document["started"]
    import datetime as dt

    moment = dt.datetime.fromisoformat(started)
    first, _ = result_paths(Path("r"), "0.24.0", moment, "0000aaaa")
    second, _ = result_paths(Path("r"), "0.24.0", moment, "0000bbbb")
    assert first != second
    assert first.name == f"{moment:%Y-%m-%dT%H%M%SZ}-0000aaaa-openai-agents-0.24.0.json"
    path = no_redis_run.json_path
    before = path.read_text()
    with pytest.raises(FileExistsError):
        atomic_write_text(path, "{}", replace=False)
    assert path.read_text() == before


def test_latest_run_and_compare_choose_by_start_time_and_skip_partial_runs(no_redis_run,
                                                                           tmp_path):
    # An older, day-named run, written before coverage was recorded. Such a document counts as
    # whole only when it names every lane and check the harness knows now, so the copy names
    # them all (lanes and checks added since it was written would otherwise make it partial).
    legacy = tmp_path / LEGACY.name
    document = json.loads(LEGACY.read_text())
    assert "coverage" not in document
    lanes, check_ids = known_selection()
    named = set(document["parameters"]["lanes"]) | {n["name"] for n in document["not_measured"]}
    for lane in sorted(lanes - named):
        document["not_measured"].append({"name": lane, "reason": "lane added since"})
    checks = document["parameters"]["checks"]
    for check_id in sorted(check_ids - set(checks)):
        checks[check_id] = {"trials": 1}
    legacy.write_text(json.dumps(document))
    partial = tmp_path / no_redis_run.json_path.name  # a newer partial run of 0.24.0
    shutil.copyfile(no_redis_run.json_path, partial)
    assert not coverage_of(read_results(legacy)).partial
    assert latest_run(tmp_path, "0.24.0") == partial
    chosen, left_out = newest_whole_runs(tmp_path)
    assert chosen == [legacy] and [r.path for r in left_out] == [partial]


def test_an_interrupted_run_is_written_marked_and_accepted_only_as_partial(tmp_path):
    def interrupt_at_second_lane(check, lane):
        if lane.name == SQLALCHEMY_SQLITE_FILE.name:
            raise KeyboardInterrupt

    # one worker: the second lane starts only once the first is measured (with two, both can
    # start before either ends, and an interrupt then has nothing measured to write)
    with pytest.raises(BenchInterrupted) as caught:
        run_bench(small_config(tmp_path, (SQLITE_FILE, SQLALCHEMY_SQLITE_FILE),
                               on_lane_start=interrupt_at_second_lane, workers=1))
    json_path, report_path = caught.value.written
    document = read_results(json_path)
    assert [f["target"] for f in document["findings"]] == ["sqlite-file"]
    coverage = coverage_of(document)
    assert not coverage.complete and coverage.partial
    assert "interrupted (complete: false)" in coverage.partial_reasons()
    assert "partial results" in report_path.read_text()
    with pytest.raises(UsageError, match="interrupted"):
        accept(json_path, tmp_path)
    assert accept(json_path, tmp_path, partial=True).updated == 1


def test_an_unreadable_baseline_loses_no_result(tmp_path):
    """A baseline that fails the schema: the run is written first, then the error names the
    baseline and the run's file, with the exit code of a results error."""
    path = baseline_path(tmp_path, sdk_version())
    path.parent.mkdir(parents=True)
    path.write_text('{"kind": "arib-bench-run", "edited": "by hand"}')
    with pytest.raises(ResultsError) as caught:
        run_bench(small_config(tmp_path, (SQLITE_FILE,)))
    [written] = [p for p in tmp_path.glob(run_glob()) if p.parent == tmp_path]
    assert [f["target"] for f in read_results(written)["findings"]] == ["sqlite-file"]
    said = str(caught.value)
    assert f"{str(path)!r}: result document fails" in said and str(written) in said
    assert caught.value.exit_code is ExitCode.ERROR_OR_NOTHING


def test_a_check_not_admitted_is_recorded_with_its_reasons(no_redis_run):
    older = copy.deepcopy(no_redis_run.document)  # as an older document, without coverage
    del older["coverage"]
    older["admission"][0].update(admitted=False, reasons=["mutant m-1 survived"])
    coverage = coverage_of(older)
    assert coverage.checks_not_measured == {REPLAY: "not admitted: mutant m-1 survived"}
    assert coverage.lanes_not_measured["redis-from-url"].startswith("not measured: redis")


def test_accept_checks_every_run_before_changing_any_baseline(no_redis_run, tmp_path):
    whole = copy.deepcopy(no_redis_run.document)
    whole["coverage"].update(every_lane=True, every_check=True, partial=False)
    whole["sdk"]["version"] = "0.19.2"
    first = write(tmp_path / "2026-12-01T000000Z-0000abcd-openai-agents-0.19.2.json", whole)
    code = main(["accept", str(first), str(no_redis_run.json_path), "--out", str(tmp_path)])
    assert code == 2 and not (tmp_path / "baselines").exists()


ROOT_DIR = Path(__file__).resolve().parent.parent
COMMITTED = sorted((ROOT_DIR / "results" / "baselines").glob("openai-agents-*.json"))


@pytest.mark.parametrize("path", COMMITTED, ids=[p.name for p in COMMITTED])
def test_a_committed_baseline_is_whole(path: Path) -> None:
    """A committed baseline holds a cell for every check admitted and lane measured on its
    version (in the run it was accepted from and in the newest run committed), and was
    accepted with today's definition of every check: else the bench of a fresh clone gates
    on cells `new`. (The LangGraph family's: tests/langgraph/test_baselines.py.)"""
    from arib.runs.baseline import committed_gaps

    problems = committed_gaps(path, ROOT_DIR / "results")
    assert not problems, f"{path.name}:\n" + "\n".join(problems)


def test_a_baseline_lacking_an_admitted_check_s_cells_is_not_whole() -> None:
    from arib.runs.baseline import baseline_gaps

    def run(admitted: list[str], findings: list[tuple[str, str]],
            checks: list[dict[str, object]]) -> dict[str, object]:
        return {"sdk": {"name": "fam", "version": "1.0"}, "started": "2026-01-01T00:00:00",
                "run_id": "r1", "checks": checks,
                "findings": [{"invariant_id": c, "target": lane} for c, lane in findings],
                "coverage": {"lanes_selected": ["a", "b"], "lanes_measured": ["a", "b"],
                             "checks_selected": ["C1", "C2"], "checks_admitted": admitted,
                             "every_lane": True, "every_check": True, "complete": True}}

    c1 = {"id": "C1", "params": {"trials": 2}, "generated": []}
    c2 = {"id": "C2", "params": {"trials": 2}, "generated": []}
    whole = run(["C1"], [("C1", "a"), ("C1", "b")], [c1, c2])
    assert baseline_gaps(whole, whole, [c1, c2]) == []
    # the newest run admits C2 as well: the baseline has none of its cells
    newer = run(["C1", "C2"], [("C1", "a"), ("C1", "b"), ("C2", "a"), ("C2", "b")], [c1, c2])
    [gap] = baseline_gaps(whole, newer)
    assert gap == ("C2 is admitted in the newest run of fam 1.0 (r1) and has no cell on 2 "
                   "lane(s) measured there: a, b")
    # C2, not admitted when accepted, was given a generated mutant since: it may be now
    redefined = {**c2, "generated": [{"target": "a", "qualname": "*", "operator": "*"}]}
    [gap] = baseline_gaps(whole, None, [c1, redefined])
    assert gap.startswith("C2 was not admitted in the run it was accepted from, and its "
                          "definition changed since (generated)")
    # an admitted check redefined keeps its cells; a new check has none
    more = {**c1, "params": {"trials": 3}}
    [gap] = baseline_gaps(whole, None, [more, c2, {"id": "C3"}])
    assert gap.startswith("C3 was no check of the run it was accepted from")
    # a cell missing from the run it was accepted from itself
    torn = run(["C1"], [("C1", "a")], [c1, c2])
    [gap] = baseline_gaps(torn, None)
    assert gap.endswith("has no cell on 1 lane(s) measured there: b")
