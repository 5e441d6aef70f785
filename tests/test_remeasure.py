"""A racy cell that flipped in every trial, too few to judge: measured again, then judged."""

from __future__ import annotations

import copy
import signal
from pathlib import Path
from typing import Any

import pytest

from arib.ground.keys import Cell
from arib.runs import bench
from arib.runs.baseline import baseline_path, regressions
from arib.runs.bench import BenchInterrupted, run_bench
from arib.runs.compare import GateResult, diff_runs
from arib.runs.remeasure import (
    MAX_TRIALS,
    RemeasureInterrupted,
    affordable_trials,
    remeasure,
    trials_to_judge,
    unjudged_flips,
)
from arib.runs.results import read_results
from arib.targets.openai_agents.sdk import SQLITE_FILE
from tests.test_baseline import REPLAY, small_config, write

PART = {"decisions": 120, "controlled": 117}  # three decisions left to a thread or a server


def finding(check, lane, violating, trials, *, control=PART, params=True, duration=1.0):
    """A cell's finding as a result file holds it (the fields the gate and the rule read)."""
    out = {"invariant_id": check, "target": lane,
           "verdict": "violated" if violating else "held",
           "violating_trials": violating, "trials": trials, "seeds": list(range(trials)),
           "params": {"trials": trials} if params else {}, "counts": {},
           "duration_s": duration, "modes": {}, "violation_modes": {}}
    if control is not None:
        out["control"] = control
    return out


def result(before, after) -> GateResult:
    changes = diff_runs({"findings": before}, {"findings": after})
    return GateResult(tuple(changes), len(before))


@pytest.mark.parametrize(("baseline", "trials", "expected"), [
    (2, 3, 5),  # 2/2 -> 0/5: p = 1/21
    (1, 2, MAX_TRIALS),  # 1/1 -> 0/20: p = 1/21
    (4, 5, 5),  # already enough: 4/4 -> 0/5 is significant
    (3, 4, 4),
])
def test_the_trials_that_let_the_test_judge_a_complete_flip(baseline, trials, expected):
    assert trials_to_judge(baseline, trials) == expected


def test_a_cell_measured_again_stays_well_inside_its_time_limit():
    first = finding("C", "l", 0, 2, duration=10.0)  # 5 s a trial
    assert affordable_trials(5, first, timeout_s=60.0) == 5
    assert affordable_trials(8, first, timeout_s=60.0) == 6  # half of 60 s at 5 s a trial
    assert affordable_trials(8, first, timeout_s=8.0) == 2  # no room: its own trials


def test_only_complete_flips_too_few_trials_can_judge_are_measured_again():
    before = [finding("A", "l", 2, 2), finding("B", "l", 4, 4), finding("C", "l", 2, 2,
              control=None), finding("D", "l", 2, 2, params=False), finding("E", "l", 1, 2)]
    after = [finding("A", "l", 0, 2), finding("B", "l", 0, 4), finding("C", "l", 0, 2,
             control=None), finding("D", "l", 0, 2, params=False), finding("E", "l", 0, 2)]
    gated = result(before, after)
    # A: racy (uncontrolled decisions), every trial flipped, p = 0.33: gates, unjudged.
    # B: 4/4 -> 0/4 is significant: judged by the test. C: every decision controlled and the
    # trials agreed: exact. E: not every trial flipped: judged by rate, does not gate.
    assert [c.cell for c in unjudged_flips(gated)] == [Cell("A", "l"), Cell("D", "l")]
    asked = []

    def measure(cell, trials):
        asked.append((cell, trials))
        return finding(cell.check_id, cell.lane, 3, trials)

    done = remeasure(gated, {c: 60.0 for c in "ABCDE"}, {c: "trials" for c in "ABCDE"},
                     measure)
    assert asked == [(Cell("A", "l"), 5)]  # D has no trials parameter: left as it was
    [again] = done
    assert again.to_json() == {"check": "A", "lane": "l", "first": "held 0/2",
                               "baseline": "violated 2/2", "trials": 5,
                               "second": "violated 3/5", "why": again.why}
    assert "every trial changed" in again.why
    assert again.describe().startswith("A on l: measured again with 5 trials: held 0/2 -> "
                                       "violated 3/5 (baseline violated 2/2)")


def test_a_measurement_again_whatever_it_shows_is_reported():
    gated = result([finding("A", "l", 0, 2)], [finding("A", "l", 2, 2)])
    [again] = remeasure(gated, {"A": 60.0}, {"A": "trials"},
                        lambda cell, n: finding("A", "l", n, n))
    assert (again.first, again.second) == ("violated 2/2", "violated 5/5")


def test_a_cell_not_measured_again_is_left_out():
    """A second measurement that did not happen (``measure`` returns None): the first one
    stands, and nothing says it was measured again."""
    gated = result([finding("A", "l", 0, 2), finding("B", "l", 0, 2)],
                   [finding("A", "l", 2, 2), finding("B", "l", 2, 2)])
    done = remeasure(gated, {"A": 60.0, "B": 60.0}, {"A": "trials", "B": "trials"},
                     lambda cell, n: None if cell.check_id == "A" else finding("B", "l", n, n))
    assert [again.cell for again in done] == [Cell("B", "l")]


def test_an_interrupt_stops_the_second_measurements_saying_which_were_done():
    """Ctrl-C during the second measurement of B: A's stands measured again, B and C keep
    their first measurement, and the interrupt is not swallowed."""
    cells = "ABC"
    gated = result([finding(c, "l", 0, 2) for c in cells], [finding(c, "l", 2, 2) for c in cells])
    asked: list[str] = []

    def measure(cell: Cell, n: int) -> dict:
        asked.append(cell.check_id)
        if cell.check_id == "B":
            raise KeyboardInterrupt
        return finding(cell.check_id, "l", n, n)

    with pytest.raises(RemeasureInterrupted) as caught:
        remeasure(gated, dict.fromkeys(cells, 60.0), dict.fromkeys(cells, "trials"), measure)
    assert isinstance(caught.value, KeyboardInterrupt)
    assert [again.cell for again in caught.value.done] == [Cell("A", "l")]
    assert asked == ["A", "B"]


@pytest.mark.slow
def test_the_bench_measures_an_unjudged_flip_again_and_the_gate_judges_it(tmp_path):
    """A real run: REPLAY-001 on sqlite-file (violated at every trial on this SDK) against a
    baseline saying held 0/2 with decisions left uncontrolled: measured again with 5 trials,
    the gate then finds the flip significant (p = 1/21) and fails on it."""
    first = run_bench(small_config(tmp_path, (SQLITE_FILE,)))
    [cell] = first.document["findings"]
    assert (cell["verdict"], cell["trials"]) == ("violated", 1)
    baseline = copy.deepcopy(first.document)
    baseline["findings"][0]["counts"] = dict.fromkeys(cell["counts"], 0)
    baseline["findings"][0].update(verdict="held", violating_trials=0, trials=2,
                                   seeds=[1, 2], violation_modes={},
                                   schedule=None, control=PART)
    write(baseline_path(tmp_path, first.document["sdk"]["version"]), baseline)
    second = run_bench(small_config(tmp_path, (SQLITE_FILE,)))
    doc = read_results(second.json_path)
    [again] = doc["remeasured"]
    assert (again["check"], again["lane"], again["trials"]) == (REPLAY, "sqlite-file", 5)
    assert again["first"].startswith("violated 1/1") and again["second"].startswith(
        "violated 5/5")
    [cell] = doc["findings"]
    assert (cell["verdict"], cell["violating_trials"], cell["trials"]) == ("violated", 5, 5)
    [change] = regressions(doc, tmp_path).changes
    assert change.gates and change.judgement.test.significant
    assert second.gate == regressions(doc, tmp_path)  # the run's own judgement, read once
    assert "## Measured again" in second.report_path.read_text()


def _flip_against_baseline(tmp_path: Path) -> None:
    """A baseline saying held 0/2 (racy) for REPLAY-001 on sqlite-file, violated every trial."""
    first = run_bench(small_config(tmp_path, (SQLITE_FILE,)))
    baseline = copy.deepcopy(first.document)
    baseline["findings"][0]["counts"] = dict.fromkeys(baseline["findings"][0]["counts"], 0)
    baseline["findings"][0].update(verdict="held", violating_trials=0, trials=2,
                                   seeds=[1, 2], violation_modes={},
                                   schedule=None, control=PART)
    write(baseline_path(tmp_path, first.document["sdk"]["version"]), baseline)


def _written_run(caught: pytest.ExceptionInfo[BenchInterrupted]) -> dict:
    [json_path] = [p for p in caught.value.written if p.suffix == ".json"]
    assert [p.suffix for p in caught.value.written] == [".json", ".md"]
    return read_results(json_path)


@pytest.mark.slow
def test_a_stop_while_a_flip_is_measured_again_writes_the_whole_run(tmp_path, monkeypatch):
    """Ctrl-C during the second measurement: it is not swallowed (the run went on and was
    gated as if nothing happened); the run is written whole with the first measurement, and
    the stop ends it as an interrupt."""
    _flip_against_baseline(tmp_path)
    real, calls = bench._measure, []

    def measure(config: Any, prepared: Any, runs: Any, durations: Any) -> Any:
        calls.append(len(runs))
        if len(calls) == 2:  # the measurement again: stopped there
            return [], True, None
        return real(config, prepared, runs, durations)

    monkeypatch.setattr(bench, "_measure", measure)
    with pytest.raises(BenchInterrupted) as caught:
        run_bench(small_config(tmp_path, (SQLITE_FILE,)))
    assert calls == [1, 1] and caught.value.complete
    doc = _written_run(caught)
    assert doc["parameters"]["complete"] and "remeasured" not in doc
    [cell] = doc["findings"]
    assert (cell["verdict"], cell["trials"]) == ("violated", 1)  # the first measurement


@pytest.mark.slow
def test_a_stop_once_the_cells_are_measured_is_held_until_they_are_written(
    tmp_path, monkeypatch,
):
    """A Ctrl-C as the baseline is read (after the last cell, before the files): the files
    are written, then the stop ends the run; nothing measured is lost."""
    real = bench.read_baseline

    def read_and_stop(*args: Any) -> Any:
        signal.raise_signal(signal.SIGINT)
        return real(*args)

    monkeypatch.setattr(bench, "read_baseline", read_and_stop)
    with pytest.raises(BenchInterrupted) as caught:
        run_bench(small_config(tmp_path, (SQLITE_FILE,)))
    assert caught.value.complete
    doc = _written_run(caught)
    assert doc["parameters"]["complete"] and len(doc["findings"]) == 1
