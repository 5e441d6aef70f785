"""The bench starts its longest cells first and writes the findings in the order of its cells."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from arib.caches.verdicts import AdmissionCache
from arib.checks.registry import get_check
from arib.execute import RunOptions, sdk_version
from arib.ground.keys import Cell
from arib.ground.model import Admission, Verdict
from arib.ground.proctime import forks, process_age_s
from arib.runs import bench
from arib.runs.bench import BenchConfig, LaneRun, defers_sample, longest_first, run_bench
from arib.runs.results import read_results
from arib.targets.openai_agents.sdk import ADVANCED_SQLITE_FILE, SQLITE_FILE
from tests.test_baseline import REPLAY, small_config


def test_the_longest_recorded_cells_start_first_and_unrecorded_ones_before_them():
    check = get_check(REPLAY)
    runs = [LaneRun(check, lane, RunOptions(params={}))
            for lane in (SQLITE_FILE, ADVANCED_SQLITE_FILE, SQLITE_FILE)]
    durations = {Cell(REPLAY, "sqlite-file"): 0.5, Cell(REPLAY, "advanced-sqlite-file"): 2.0}
    assert longest_first(runs, durations) == [1, 0, 2]  # ties keep their order
    assert longest_first(runs, {}) == [0, 1, 2]
    assert longest_first(runs, {Cell(REPLAY, "sqlite-file"): 9.0}) == [1, 0, 2]  # unknown first


def test_a_run_starts_by_the_durations_its_folder_recorded_and_writes_cells_in_order(tmp_path):
    # A previous run of this version in the results folder recorded sqlite-file as the longer.
    previous = {"findings": [{"invariant_id": REPLAY, "target": "sqlite-file", "duration_s": 3.0},
                             {"invariant_id": REPLAY, "target": ADVANCED_SQLITE_FILE.name,
                              "duration_s": 0.1}]}
    name = f"2000-01-01T000000Z-00000000-openai-agents-{sdk_version()}.json"
    (tmp_path / name).write_text(json.dumps(previous))
    started: list[str] = []
    outcome = run_bench(small_config(tmp_path, (ADVANCED_SQLITE_FILE, SQLITE_FILE),
                                     on_lane_start=lambda check, lane: started.append(lane.name)))
    assert started == ["sqlite-file", ADVANCED_SQLITE_FILE.name]
    written = read_results(Path(outcome.json_path))
    assert [f["target"] for f in written["findings"]] == [ADVANCED_SQLITE_FILE.name,
                                                           "sqlite-file"]


def test_a_run_records_how_soon_after_its_process_started_its_first_child_and_cell_began(
        tmp_path):
    before = process_age_s()
    outcome = run_bench(small_config(tmp_path, (SQLITE_FILE,)))
    startup = read_results(Path(outcome.json_path))["startup"]
    # Counted from this test process's start: the run's own first child (an admission gate;
    # not a child an earlier test forked) started after the run began, and no later than the
    # first measured cell (the ages are read in clock ticks, rounded to ms).
    assert before is not None
    assert before - 0.01 <= startup["first_child_s"] <= startup["first_cell_s"]  # 10 ms ticks
    assert startup == outcome.document["startup"]


def cached(out: Path, cache: AdmissionCache, **extra) -> BenchConfig:
    """A small bench of one lane with its admission answered by ``cache``."""
    return dataclasses.replace(small_config(out, (SQLITE_FILE,), **extra), cache=cache)


def test_a_warm_run_measures_its_cells_first_and_takes_the_caches_sample_after_them(tmp_path):
    root = tmp_path / "cache"
    run_bench(cached(tmp_path / "cold", AdmissionCache(root)))
    cache = AdmissionCache(root, verify=0.99)  # nearly every hit re-judged: the sample runs
    started: list[int] = []
    outcome = run_bench(cached(tmp_path / "warm", cache,
                               on_lane_start=lambda c, lane: started.append(forks())))
    assert started == [1]  # the cell was the run's first child: no admission child before it
    assert cache.counts["verified"] > 0 and cache.counts["verified"] == cache.counts["agreed"]
    assert forks() > 1  # the sample's children, after the cell
    written = read_results(Path(outcome.json_path))
    assert written["parameters"]["complete"] is True
    assert [(f["invariant_id"], f["target"]) for f in written["findings"]] == [
        (REPLAY, "sqlite-file")]


def test_a_run_whose_admission_is_not_all_cached_takes_its_sample_first(tmp_path):
    cache = AdmissionCache(tmp_path / "cache", verify=0.5)  # empty: every pair to judge
    started: list[int] = []
    outcome = run_bench(cached(tmp_path, cache,
                               on_lane_start=lambda c, lane: started.append(forks())))
    assert started[0] > 1  # admission's children came first, as always
    assert outcome.document["admission"][0]["admitted"] is True
    assert cache.counts["miss"] > 0 and cache.counts["verified"] == 0  # nothing was cached


def test_a_sample_that_changes_what_is_admitted_changes_the_cells_measured(tmp_path,
                                                                          monkeypatch):
    # The admission the cache gives (nothing admitted) and the one after its sample (REPLAY
    # admitted, as when the sample disagreed and everything was admitted again).
    passes = iter([False, True])

    def admit(config, services=True):
        admitted = next(passes)
        return (Admission(REPLAY, admitted, () if admitted else ("a reason",),
                          (Verdict.HELD,), (), 0.0),)

    monkeypatch.setattr(bench, "_admit", admit)
    outcome = run_bench(cached(tmp_path, AdmissionCache(tmp_path / "cache", verify=0.5)))
    assert next(passes, None) is None  # admitted twice: from the cache, then with the sample
    written = read_results(Path(outcome.json_path))
    assert [(f["invariant_id"], f["target"]) for f in written["findings"]] == [
        (REPLAY, "sqlite-file")]  # measured after the sample, for the check admitted now
    assert [a["admitted"] for a in written["admission"]] == [True]


def test_without_a_store_or_with_every_pair_verified_the_sample_is_not_deferred(tmp_path):
    assert not defers_sample(AdmissionCache(None))
    assert not defers_sample(AdmissionCache(tmp_path, verify=1.0))  # --verify-cache: first
    assert not defers_sample(AdmissionCache(tmp_path, verify=0.0))  # nothing to sample
    assert defers_sample(AdmissionCache(tmp_path))
