"""The bench starts its longest cells first and writes the findings in the order of its cells."""

from __future__ import annotations

import json
from pathlib import Path

from arib.checks.registry import get_check
from arib.execute import RunOptions, sdk_version
from arib.ground.keys import Cell
from arib.ground.proctime import process_age_s
from arib.runs.bench import LaneRun, longest_first, run_bench
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
