"""Lanes from outside: an installed package adds lanes to a family through an entry point.

The package is declared the way pip would install it (a ``.dist-info`` folder with
``entry_points.txt`` on the path); its lane is a user's own store (tests/userstore), and a
second entry point that cannot be imported is reported as not measured, naming its
distribution, while the other lanes go on.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from arib.ground.errors import UnknownNameError
from arib.ground.family import lane_groups, plugin_lanes
from arib.ground.services import ServiceManager
from arib.lanes import prepare_lanes
from arib.reports.show import find_mutant
from arib.targets.registry import family_lanes, get_target

ROOT = Path(__file__).resolve().parent.parent
# The group as documented (a valid name), and the old hyphenated spelling, which is read too.
ENTRY_POINTS = """[arib.lanes.openai_agents]
user-json = tests.userstore.stores:json_store

[arib.lanes.openai-agents]
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
    assert names[-1] == "user-json" and "reference" in names  # the entry point's name
    assert "json_store" not in names
    assert get_target("user-json").description.startswith("user factory")
    with ServiceManager(environ={}) as manager:
        prepared = prepare_lanes((get_target("user-json"),), manager)
    assert [t.name for t in prepared.lanes] == ["user-json"]
    (broken,) = [n for n in prepared.not_measured if n.name == "user-broken"]
    assert "'userlanes'" in broken.reason and "no_such_module_for_lanes" in broken.reason


def test_a_lane_that_reuses_a_name_is_refused(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    info = tmp_path / "clash-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: clash\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(
        "[arib.lanes.openai_agents]\nmine = tests.userstore.stores:json_store\n"
        "reference = tests.userstore.stores:json_store\n"
        "[arib.lanes.openai-agents]\nmine = tests.userstore.stores:racy_store\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    plugin_lanes.cache_clear()
    try:
        found = plugin_lanes("openai-agents", frozenset({"reference"}))
    finally:
        plugin_lanes.cache_clear()
    assert [(t.name, t.backend) for t in found.loaded] == [("mine", "json_store")]
    assert [name for name, _ in found.failed] == ["reference", "mine"]
    assert all("already taken" in why and "'clash'" in why for _, why in found.failed)


def test_the_groups_read_for_a_family() -> None:
    assert lane_groups("openai-agents") == ("arib.lanes.openai_agents",
                                            "arib.lanes.openai-agents")
    assert lane_groups("langgraph") == ("arib.lanes.langgraph",)
    assert re.fullmatch(r"\w+(\.\w+)*", lane_groups("openai-agents")[0])  # setuptools' rule


def test_show_passes_over_a_plugin_lane_it_cannot_mutate(installed: Path) -> None:
    assert find_mutant("sqlite_zero_limit_means_all", ["user-json"]).target == "sqlite-file"
    with pytest.raises(UnknownNameError) as caught:
        find_mutant("m-000000000000", ["user-json"])
    assert "passed over" in str(caught.value) and "user-json" in str(caught.value)


@pytest.mark.slow
def test_run_and_bench_measure_an_installed_lane(installed: Path) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(installed), str(ROOT)])}
    done = subprocess.run(
        [sys.executable, "-m", "arib", "run", "--check", "ARIB-CONC-001", "--lane",
         "user-json", "--param", "ARIB-CONC-001.trials=1", "--json", "-"],
        cwd=installed, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    finding = json.loads(done.stdout)
    assert finding["target"] == "user-json" and finding["verdict"] == "held"
    bench = subprocess.run(
        [sys.executable, "-m", "arib", "bench", "--lanes", "user-json", "--checks",
         "ARIB-CONC-001", "--out", "results", "--quiet"],
        cwd=installed, env=env, capture_output=True, text=True, timeout=600)
    assert bench.returncode == 0, bench.stdout + bench.stderr
    (run,) = (installed / "results").glob("*-openai-agents-*.json")
    doc = json.loads(run.read_text())
    assert [(f["target"], f["verdict"]) for f in doc["findings"]] == [("user-json", "held")]
    assert "user-broken" in {n["name"] for n in doc["not_measured"]}
