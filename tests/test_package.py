"""arib.ground.package and the facade: where the installed package is, and ``arib.validate``."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

import arib
import arib.api
from arib.ground.package import (
    LAYOUT,
    checkout_name,
    checkout_root,
    data_path,
    folder,
    own_folders,
)

ROOT = Path(__file__).resolve().parent.parent


def test_the_facade_is_the_api_loaded_on_first_use() -> None:
    for name in ("validate", "avalidate", "lane", "as_lane", "Lane", "Report", "DEFAULT_CHECKS"):
        assert getattr(arib, name) is getattr(arib.api, name)
    assert arib.__version__ == arib.ground.package.version()
    with pytest.raises(AttributeError, match="'nope'"):
        arib.nope  # noqa: B018 - the lookup is the test
    code = "import sys, arib; print(sorted(m for m in sys.modules if m.startswith('arib')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "['arib']"


def test_the_checkout_folders_are_the_packages() -> None:
    assert folder() == f"{ROOT / 'harness'}/" and folder("checks") == f"{ROOT / 'checks'}/"
    assert own_folders() == tuple(f"{ROOT / p}/" for p in ("harness", "checks", "mutants",
                                                           "targets"))
    assert checkout_root() == ROOT
    assert data_path("arib", "schemas").is_dir()
    assert (data_path("arib.mutants", "survivors") / "openai-agents-0.24.0.txt").is_file()


@pytest.mark.parametrize(("module", "expected"), [
    ("arib", "harness"), ("arib.execute", "harness.execute"),
    ("arib.ground.model", "harness.ground.model"),
    ("arib.checks.openai_agents.conc_001", "checks.openai_agents.conc_001"),
    ("arib.targets.langgraph.lanes", "targets.langgraph.lanes"),
    ("agents.memory.sqlite_session", "agents.memory.sqlite_session"), ("aribx.y", "aribx.y"),
])
def test_a_module_is_named_as_the_checkout_lays_it_out(module: str, expected: str) -> None:
    assert checkout_name(module) == expected


def test_the_layout_table_is_pyprojects_package_dir() -> None:
    line = next(line for line in (ROOT / "pyproject.toml").read_text().splitlines()
                if line.startswith("package-dir = "))
    pairs = dict(re.findall(r'"([\w.]+)" = "(\w+)"', line))
    assert {folder: name for name, folder in pairs.items()} == LAYOUT
