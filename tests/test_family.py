"""Runtime families as plugins: the registry, and a toy second family measured end to end.

The toy family (tests/toyfamily/arib_toy) is found the way an installed package would be: a
``.dist-info`` folder with an ``arib.families`` entry point on the path. admit, bench and
survey then run on it through ``python -m arib --family toy-notes`` with no change to
harness/.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from arib.ground import family as family_mod
from arib.ground.errors import PluginError, UnknownNameError
from arib.ground.family import Family, active_family, get_family

ROOT = Path(__file__).resolve().parent.parent
TOY = ROOT / "tests" / "toyfamily"


def install_entry_point(folder: Path, name: str, ref: str, dist: str = "arib-toy") -> Path:
    """A dist-info folder declaring ``name = ref`` in arib.families (what pip would write)."""
    info = folder / f"{dist.replace('-', '_')}-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[arib.families]\n{name} = {ref}\n")
    return folder


def harness(tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(TOY), str(tmp), str(ROOT)])}
    env.pop("ARIB_FAMILY", None)
    return subprocess.run([sys.executable, "-m", "arib", "--family", "toy-notes", *args],
                          cwd=tmp, env=env, capture_output=True, text=True, timeout=300)


@pytest.fixture
def toy_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    install_entry_point(tmp_path, "toy-notes", "arib_toy:FAMILY")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.syspath_prepend(str(TOY))
    get_family.cache_clear()
    yield tmp_path
    get_family.cache_clear()


def test_openai_agents_is_the_default_family_with_its_reference() -> None:
    fam = active_family()
    assert fam.name == "openai-agents" and fam.distribution == "openai-agents"
    assert fam.resolve("reference").name == "reference"
    assert fam.lock_file("0.24.0") == ROOT / "harness" / "locks" / "openai-agents-0.24.0.txt"


def test_an_installed_entry_point_registers_a_family(toy_path: Path) -> None:
    assert family_mod.known_families()["toy-notes"] == "arib_toy:FAMILY"
    toy = get_family("toy-notes")
    assert isinstance(toy, Family) and toy.version() == "0.1"
    assert [t.name for t in toy.resolve("lanes")] == ["toy-reference", "notes-file"]


def test_an_unknown_family_names_the_known_ones() -> None:
    with pytest.raises(UnknownNameError, match=r"unknown family 'nope'.*openai-agents"):
        get_family("nope")


@pytest.mark.parametrize(("name", "ref", "message"), [
    ("broken", "no_such_module_xyz:FAMILY", r"family 'broken'.*no_such_module_xyz.*uninstall"),
    ("wrong", "os:sep", r"'wrong'.*arib.ground.family.Family"),
])
def test_a_bad_entry_point_is_named_with_the_fix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                 name: str, ref: str, message: str) -> None:
    install_entry_point(tmp_path, name, ref, dist=f"{name}-fam")
    monkeypatch.syspath_prepend(str(tmp_path))
    get_family.cache_clear()
    try:
        with pytest.raises(PluginError, match=message) as raised:
            get_family(name)
    finally:
        get_family.cache_clear()
    if name == "broken":  # the import's own error is chained, never hidden
        assert isinstance(raised.value.__cause__, ModuleNotFoundError)


def test_a_family_that_fails_to_import_stops_the_command_with_its_traceback(
        tmp_path: Path) -> None:
    install_entry_point(tmp_path, "broken", "no_such_module_xyz:FAMILY", dist="broken-fam")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}
    env.pop("ARIB_FAMILY", None)
    done = subprocess.run([sys.executable, "-m", "arib", "list"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "family 'broken' ('no_such_module_xyz:FAMILY') cannot be loaded" in done.stderr
    assert "Traceback" in done.stderr and "No module named 'no_such_module_xyz'" in done.stderr


def test_exactly_one_family_is_the_default() -> None:
    from arib.ground.family import all_families, default_family

    assert [f.name for f in all_families() if f.default] == [default_family()] == [
        "openai-agents"]


def test_an_unknown_family_on_the_command_line_exits_2(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "arib", "--family", "nope", "list"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert "unknown family 'nope'" in done.stderr


@pytest.mark.slow
def test_admit_bench_and_survey_measure_the_toy_family(toy_path: Path) -> None:
    listed = harness(toy_path, "list")
    assert listed.returncode == 0, listed.stderr
    assert "ARIB-TOY-001" in listed.stdout and "ARIB-CONC-001" not in listed.stdout

    admitted = harness(toy_path, "admit", "--all", "--quiet", "--no-cache")
    assert admitted.returncode == 0, admitted.stdout + admitted.stderr
    assert "ARIB-TOY-001: ADMITTED" in admitted.stdout
    killed = [line for line in admitted.stdout.splitlines() if line.strip().startswith("killed")]
    assert len(killed) == 3  # two hand-written, one generated (drop_lock in NoteStore.add)

    bench = harness(toy_path, "bench", "--out", "results", "--quiet", "--no-cache")
    assert bench.returncode == 0, bench.stdout + bench.stderr
    (run,) = (toy_path / "results").glob("*-toy-notes-0.1.json")
    doc = json.loads(run.read_text())
    assert doc["sdk"] == {"name": "toy-notes", "version": "0.1"}
    assert [(f["target"], f["invariant_id"], f["verdict"]) for f in doc["findings"]] == [
        ("notes-file", "ARIB-TOY-001", "held")]
    assert [(a["check_id"], a["admitted"]) for a in doc["admission"]] == [("ARIB-TOY-001", True)]

    survey = harness(toy_path, "survey", "--quiet", "--write", "--out", "survey", "--no-cache")
    assert survey.returncode == 0, survey.stdout + survey.stderr
    lane = json.loads((toy_path / "survey" / "notes-file.json").read_text())
    statuses = {m["id"]: m["status"] for m in lane["outcomes"]}
    assert lane["status"] == "ok" and lane["sdk"] == "0.1" and len(statuses) == 6
    assert list(statuses.values()).count("killed") >= 3
    assert statuses["m-35c737246626"] == "killed"  # the drop_lock mutant admission pairs

    machine = harness(toy_path, "survey", "--json", "-")
    assert machine.returncode == 0, machine.stderr
    document = json.loads(machine.stdout)  # stdout holds the JSON and nothing else
    assert document["kind"] == "arib-survey-set"
    assert [lane["lane"] for lane in document["lanes"]] == ["toy-reference", "notes-file"]
    assert "surveyed" in machine.stderr


def test_official_refuses_a_family_without_its_own_suite(capsys: pytest.CaptureFixture[str]
                                                          ) -> None:
    from arib.cli.main import main

    assert main(["--family", "openai-agents", "official"]) == 2
    err = capsys.readouterr().err
    assert "family 'openai-agents' has none" in err and "--family langgraph official" in err


def test_a_record_naming_something_else_than_its_kind_is_refused(monkeypatch: pytest.MonkeyPatch
                                                                  ) -> None:
    import dataclasses

    from arib.official.suite import active_suite
    from arib.parity.options import active_kind

    lanes = "arib.targets.openai_agents.lanes:ALL_TARGETS"
    wrong = dataclasses.replace(get_family("openai-agents"), parity=lanes, official=lanes)
    monkeypatch.setattr(family_mod, "active_family", lambda: wrong)
    monkeypatch.setattr("arib.official.suite.active_family", lambda: wrong)
    with pytest.raises(PluginError, match="parity='arib.targets.openai_agents.lanes:ALL_TARGETS'"
                                          " names an object of type 'tuple', not 'WorkflowKind'"):
        active_kind()
    with pytest.raises(PluginError, match="names an object of type 'tuple', not 'OfficialSuite'"):
        active_suite()
