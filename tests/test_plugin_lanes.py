"""Lanes from outside: an installed package adds lanes to a family through an entry point.

The package is declared the way pip would install it (a ``.dist-info`` folder with
``entry_points.txt`` on the path); its lane is a user's own store (tests/userstore), and a
second entry point that cannot be imported is reported as not measured, naming its
distribution, while the other lanes go on.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from arib.ground.family import plugin_lanes
from arib.ground.services import ServiceManager
from arib.lanes import prepare_lanes
from arib.targets.registry import family_lanes, get_target

ROOT = Path(__file__).resolve().parent.parent
ENTRY_POINTS = """[arib.lanes.openai-agents]
user-json = tests.userstore.stores:json_store
user-broken = no_such_module_for_lanes:LANE
"""


@pytest.fixture
def installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    info = tmp_path / "userlanes-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: userlanes\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(ENTRY_POINTS)
    monkeypatch.syspath_prepend(str(tmp_path))
    plugin_lanes.cache_clear()
    yield tmp_path
    plugin_lanes.cache_clear()


def test_an_installed_lane_joins_the_family_and_a_broken_one_is_named(installed: Path) -> None:
    names = [t.name for t in family_lanes()]
    assert names[-1] == "json_store" and "reference" in names
    assert get_target("json_store").description.startswith("user factory")
    with ServiceManager(environ={}) as manager:
        prepared = prepare_lanes((get_target("json_store"),), manager)
    assert [t.name for t in prepared.lanes] == ["json_store"]
    (broken,) = [n for n in prepared.not_measured if n.name == "user-broken"]
    assert "'userlanes'" in broken.reason and "no_such_module_for_lanes" in broken.reason


def test_a_lane_that_reuses_a_name_is_refused(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    info = tmp_path / "clash-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: clash\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(
        "[arib.lanes.openai-agents]\nmine = tests.userstore.stores:json_store\n"
        "again = tests.userstore.stores:json_store\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    plugin_lanes.cache_clear()
    try:
        found = plugin_lanes("openai-agents", frozenset({"reference"}))
    finally:
        plugin_lanes.cache_clear()
    assert [t.name for t in found.loaded] == ["json_store"]
    ((name, why),) = found.failed
    assert name == "again" and "already taken" in why and "'clash'" in why


@pytest.mark.slow
def test_run_and_bench_measure_an_installed_lane(installed: Path) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(installed), str(ROOT)])}
    done = subprocess.run(
        [sys.executable, "-m", "arib", "run", "--check", "ARIB-CONC-001", "--lane",
         "json_store", "--param", "ARIB-CONC-001.trials=1"],
        cwd=installed, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    finding = json.loads(done.stdout)
    assert finding["target"] == "json_store" and finding["verdict"] == "held"
    bench = subprocess.run(
        [sys.executable, "-m", "arib", "bench", "--lanes", "json_store", "--checks",
         "ARIB-CONC-001", "--out", "results", "--quiet"],
        cwd=installed, env=env, capture_output=True, text=True, timeout=600)
    assert bench.returncode == 0, bench.stdout + bench.stderr
    (run,) = (installed / "results").glob("*-openai-agents-*.json")
    doc = json.loads(run.read_text())
    assert [(f["target"], f["verdict"]) for f in doc["findings"]] == [("json_store", "held")]
    assert "user-broken" in {n["name"] for n in doc["not_measured"]}
