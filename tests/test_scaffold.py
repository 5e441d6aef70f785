"""Scaffolding a new check: files that load, a stub that cannot be admitted, clear refusals."""

from __future__ import annotations

import importlib.util

import pytest

from arib.checks.registry import validate_module
from arib.ground.errors import UnknownNameError, UsageError
from arib.scaffold import scaffold


def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_scaffold_writes_a_valid_check_and_mutant(tmp_path):
    (tmp_path / "checks" / "openai_agents").mkdir(parents=True)
    (tmp_path / "mutants" / "openai_agents").mkdir(parents=True)
    check_path, mutant_path = scaffold("ARIB-DEMO-001", "sqlite-file", tmp_path)
    assert check_path == tmp_path / "checks" / "openai_agents" / "demo_001.py"
    assert mutant_path == tmp_path / "mutants" / "openai_agents" / "demo_001.py"
    spec = validate_module(load(check_path, "scaffolded.demo_001"))  # named by its id
    assert spec.id == "ARIB-DEMO-001" and spec.mutants == ("demo_001_sqlite_file_todo",)
    assert spec.generated[0].target == "sqlite-file"
    assert "NotImplementedError" in check_path.read_text()
    assert "@handwritten(" in mutant_path.read_text()
    compile(mutant_path.read_text(), str(mutant_path), "exec")


@pytest.mark.parametrize("check_id, lane, error, needle", [
    ("POP-1", "sqlite-file", UsageError, "does not look like ARIB-AREA-001"),
    ("ARIB-CONC-001", "sqlite-file", UsageError, "is taken"),
    ("ARIB-DEMO-001", "nope", UnknownNameError, "unknown backend lane 'nope'"),
])
def test_scaffold_refuses_bad_input(tmp_path, check_id, lane, error, needle):
    (tmp_path / "checks" / "openai_agents").mkdir(parents=True)
    (tmp_path / "mutants" / "openai_agents").mkdir(parents=True)
    with pytest.raises(error, match=needle):
        scaffold(check_id, lane, tmp_path)


def test_scaffold_never_overwrites(tmp_path):
    (tmp_path / "checks" / "openai_agents").mkdir(parents=True)
    (tmp_path / "mutants" / "openai_agents").mkdir(parents=True)
    (tmp_path / "checks" / "openai_agents" / "demo_001.py").write_text("# mine\n")
    with pytest.raises(UsageError, match="exists already"):
        scaffold("ARIB-DEMO-001", "sqlite-file", tmp_path)
    assert (tmp_path / "checks" / "openai_agents" / "demo_001.py").read_text() == "# mine\n"


def test_scaffold_outside_a_checkout_says_where_it_writes(tmp_path):
    with pytest.raises(UsageError, match=r"no folder .*checks/openai_agents.*--root"):
        scaffold("ARIB-DEMO-001", "sqlite-file", tmp_path)
