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
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from arib.dev.noxsupport import find_uv
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
    # the backend is the store class the factory's return annotation names (what a survey
    # mutates: arib.api.lane), not the factory
    assert [(t.name, t.backend) for t in found.loaded] == [("mine", "JsonFileSession")]
    assert [name for name, _ in found.failed] == ["reference", "mine"]
    assert all("already taken" in why and "'clash'" in why for _, why in found.failed)


def test_the_groups_read_for_a_family() -> None:
    assert lane_groups("openai-agents") == ("arib.lanes.openai_agents",
                                            "arib.lanes.openai-agents")
    assert lane_groups("langgraph") == ("arib.lanes.langgraph",)
    assert re.fullmatch(r"\w+(\.\w+)*", lane_groups("openai-agents")[0])  # setuptools' rule


def test_show_looks_in_a_plugin_lanes_store_and_names_it(installed: Path) -> None:
    # A plugin lane's store class is found (arib.survey.user) and mutated like any lane's; a
    # lane whose source cannot be mutated would be passed over, named in the same error.
    assert find_mutant("sqlite_zero_limit_means_all", ["user-json"]).target == "sqlite-file"
    with pytest.raises(UnknownNameError) as caught:
        find_mutant("m-000000000000", ["user-json"])
    assert "'m-000000000000'" in str(caught.value) and "user-json" in str(caught.value)


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


def _documented_entry_points() -> str:
    """The plugin-lane example of targets/README.md, as a user copies it."""
    text = (ROOT / "targets" / "README.md").read_text()
    (block,) = re.findall(r"```toml\n(\[project\.entry-points\.\"arib\.lanes\..*?\n)```", text,
                          re.S)
    return block


@pytest.mark.slow
def test_the_documented_plugin_lane_builds_and_runs(tmp_path: Path) -> None:
    uv = find_uv()
    if uv is None:
        pytest.skip("uv is not installed (pip install uv): the example cannot be built here")
    source = tmp_path / "src"
    (source / "my_package").mkdir(parents=True)
    (source / "my_package" / "__init__.py").write_text("")
    (source / "my_package" / "lanes.py").write_text(
        "from tests.userstore.stores import json_store as my_store  # an @arib.api.lane\n")
    (source / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools>=61"]\n'
        'build-backend = "setuptools.build_meta"\n\n'
        '[project]\nname = "my-package"\nversion = "0.1"\n\n'
        f"{_documented_entry_points()}\n"
        '[tool.setuptools]\npackages = ["my_package"]\n')
    built = subprocess.run([uv, "build", "--wheel", "--out-dir", str(tmp_path / "dist"),
                            str(source)], capture_output=True, text=True, timeout=600)
    assert built.returncode == 0, built.stdout + built.stderr  # setuptools takes the group
    (wheel,) = (tmp_path / "dist").glob("*.whl")
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)  # what an installer puts on the path
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(ROOT)])}

    def arib(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "arib", *argv], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=300)

    listed = arib("list")
    assert listed.returncode == 0 and "  my-store: user factory" in listed.stdout
    ran = arib("run", "--check", "ARIB-CONC-001", "--lane", "my-store", "--param",
               "ARIB-CONC-001.trials=1", "--json", "-")
    assert ran.returncode == 0, ran.stderr
    assert (json.loads(ran.stdout)["target"], json.loads(ran.stdout)["verdict"]) == (
        "my-store", "held")
    shown = arib("show", "sqlite_zero_limit_means_all")
    assert shown.returncode == 0 and "lane:     sqlite-file" in shown.stdout, shown.stderr
    missing = arib("show", "m-000000000000", "--lane", "my-store")
    assert missing.returncode == 2 and "my-store" in missing.stderr, missing.stderr
    assert "Traceback" not in missing.stderr


@pytest.mark.parametrize("page", ["targets/README.md", "harness/api/README.md"])
def test_every_page_documents_the_group_the_harness_reads(page: str) -> None:
    groups = re.findall(r'\[project\.entry-points\."(arib\.lanes\.[^"]+)"\]',
                        (ROOT / page).read_text())
    assert groups == [lane_groups("openai-agents")[0]]
