"""arib.runs.shard: --shard k/n parsing, the fingerprint and the deterministic balanced split."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import pytest

from arib.ground.errors import UsageError
from arib.ground.keys import Cell, MutantKey
from arib.runs.shard import (
    ShardSpec,
    Split,
    admission_durations,
    arguments,
    cell_durations,
    survey_durations,
)

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("text", ["3/2", "0/4", "x", "1/0", "2", "1/x", "-1/2", ""])
def test_a_bad_shard_is_refused_naming_it(text: str) -> None:
    with pytest.raises(UsageError, match=rf"--shard {text!r} is not a shard: .*1 <= k <= n"):
        ShardSpec.parse(text)


def test_a_good_shard_parses() -> None:
    assert ShardSpec.parse("2/5") == ShardSpec(2, 5) and str(ShardSpec(2, 5)) == "2/5"


@pytest.mark.parametrize("text", ["3/2", "0/4", "x"])
def test_the_command_line_gives_one_line_and_exit_2(text: str, tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "arib", "survey", "--shard", text],
                          cwd=tmp_path, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines() == [
        f"error: --shard {text!r} is not a shard: the form is k/n with 1 <= k <= n, e.g. "
        f"--shard 1/4 ... --shard 4/4 on four machines"]


@pytest.mark.parametrize(("command", "needs"), [("survey", "--write"), ("admit", "--json")])
def test_a_shard_that_writes_nothing_to_merge_is_refused(command: str, needs: str,
                                                         tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "arib", command, "--all", "--shard", "1/2"]
                          if command == "admit" else
                          [sys.executable, "-m", "arib", command, "--shard", "1/2"],
                          cwd=tmp_path, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert f"--shard '1/2' without {needs}" in done.stderr


def _split(k: int, n: int, durations: dict[str, float] | None = None) -> Split:
    return Split(ShardSpec(k, n), {"seed": 0}, "c0ffee", durations or {})


UNITS: dict[str, float | None] = {f"lane:m-{i:03d}": None for i in range(40)}


@pytest.mark.parametrize("n", [1, 2, 3, 7, 50])
def test_the_shards_cover_every_unit_exactly_once(n: int) -> None:
    parts = [_split(k, n).keep(UNITS) for k in range(1, n + 1)]
    assert sorted(u for part in parts for u in part) == sorted(UNITS)
    assert max(map(len, parts)) - min(map(len, parts)) <= 1  # equal weights: equal counts


def test_the_split_is_the_same_every_time_and_in_any_order() -> None:
    reversed_units = dict(reversed(list(UNITS.items())))
    assert _split(2, 3).keep(UNITS) == _split(2, 3).keep(reversed_units)


def test_recorded_durations_balance_the_shards() -> None:
    units: dict[str, float | None] = {"a": 10.0, "b": 1.0, "c": 1.0, "d": 1.0, "e": 1.0,
                                      "f": 6.0, "g": None}
    parts = [_split(k, 2).keep(units) for k in (1, 2)]
    weight = {u: 1.0 if s is None else s for u, s in units.items()}  # median of known: 1
    loads = sorted(sum(weight[u] for u in part) for part in parts)
    assert loads == [10.0, 11.0]  # longest first: {a, one 1 s unit}, {f, four 1 s units}
    assert "a" in parts[0] and "f" in parts[1]


def test_the_fingerprint_ignores_the_shard_and_outputs_only() -> None:
    base = argparse.Namespace(shard="1/2", out="a", json=None, write=True, quiet=True,
                              seed=0, lanes="x", func=print)
    other = argparse.Namespace(**{**vars(base), "shard": "2/2", "out": "b", "quiet": False})
    assert arguments(base) == arguments(other) == {"lanes": "x", "seed": 0}
    seeded = argparse.Namespace(**{**vars(base), "seed": 1})
    one = Split(ShardSpec(1, 2), arguments(base), "c")
    assert one.fingerprint == Split(ShardSpec(2, 2), arguments(other), "c").fingerprint
    assert one.fingerprint != Split(ShardSpec(1, 2), arguments(seeded), "c").fingerprint
    assert one.fingerprint != Split(ShardSpec(1, 2), arguments(base), "d").fingerprint


def test_survey_durations_sum_a_written_surveys_pairs(tmp_path: Path) -> None:
    (tmp_path / "lane.json").write_text(
        '{"kind": "arib-survey", "lane": "l", "results": [{"mutant_id": "m-1", '
        '"duration_s": 1.5}, {"mutant_id": "m-1", "duration_s": 2.0}, '
        '{"mutant_id": "m-2", "duration_s": 0.25}]}')
    (tmp_path / "mutation-report.json").write_text('{"files": {}}')
    assert survey_durations(tmp_path) == {MutantKey("l", "m-1"): 3.5, MutantKey("l", "m-2"): 0.25}
    assert survey_durations(tmp_path / "absent") == {}


CELLS = [Cell(f"ARIB-X-{i:03d}", lane) for i in range(12) for lane in ("a-lane", "b-lane")]


def test_cells_are_units_split_by_their_one_string_form() -> None:
    by_cell: dict[Cell, float | None] = dict.fromkeys(CELLS)
    by_text: dict[str, float | None] = {str(c): None for c in CELLS}
    for k in (1, 2, 3):
        mine = _split(k, 3).keep(by_cell)
        assert all(isinstance(c, Cell) for c in mine)  # the keys given, not their strings
        assert {str(c) for c in mine} == _split(k, 3).keep(by_text)  # ties: the string form
    recorded = {CELLS[0]: 5.0, CELLS[1]: 1.0}
    as_text = {str(c): s for c, s in recorded.items()}
    # the manifest names the durations by the units' string form: equal digests, either way
    assert _split(1, 2, recorded).to_json()["durations"] == _split(1, 2, as_text).to_json()[
        "durations"]
    assert _split(1, 2, recorded).to_json()["durations"] != _split(1, 2).to_json()["durations"]


def test_a_bench_runs_durations_are_read_by_cell_and_by_check(tmp_path: Path) -> None:
    from arib.runs.results import run_glob

    older = tmp_path / run_glob("9.9").replace("*", "2000-01-01T000000Z-00000000", 1)
    newer = tmp_path / run_glob("9.9").replace("*", "2000-01-02T000000Z-00000000", 1)
    older.write_text('{"findings": [], "admission": []}')
    newer.write_text(
        '{"findings": [{"invariant_id": "ARIB-X-001", "target": "a-lane", "duration_s": 2.5}],'
        ' "admission": [{"check_id": "ARIB-X-001", "duration_s": 7}]}')
    assert cell_durations(tmp_path, "9.9") == {Cell("ARIB-X-001", "a-lane"): 2.5}
    assert admission_durations(tmp_path, "9.9") == {"ARIB-X-001": 7.0}
    newer.write_text('{"findings": [{"invariant_id": "ARIB-X-001"}], "admission": {}}')
    assert cell_durations(tmp_path, "9.9") == {} == admission_durations(tmp_path, "9.9")
    newer.write_text("not json")
    assert cell_durations(tmp_path, "9.9") == {} == admission_durations(tmp_path, "9.9")
    assert cell_durations(tmp_path / "absent", "9.9") == {}
