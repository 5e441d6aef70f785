"""The parent imports, once, what the runs it forks import: a check's and its lane's preload."""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import sys

import pytest

from arib.checks.registry import get_check, load_checks
from arib.targets.openai_agents.reference import REFERENCE
from arib.targets.registry import family_lanes, get_target
from arib.warm import modules_for, warm, warm_modules


def test_a_run_needs_the_checks_preload_the_lanes_module_and_its_preload():
    check = dataclasses.replace(get_check("ARIB-CONC-001"), preload=("json",))
    lane = dataclasses.replace(REFERENCE, preload=("csv",))
    assert modules_for(check, lane) == ("json", REFERENCE.module, "csv")
    assert modules_for(None, lane) == (REFERENCE.module, "csv")


def test_warming_imports_once_and_leaves_a_missing_module_to_the_child(monkeypatch):
    monkeypatch.delitem(sys.modules, "colorsys", raising=False)
    imported: list[str] = []
    real = importlib.import_module

    def spy(name: str, package: str | None = None):  # type: ignore[no-untyped-def]
        imported.append(name)
        return real(name, package)

    monkeypatch.setattr(importlib, "import_module", spy)
    warm_modules(["colorsys", "colorsys", "arib_no_such_module", "arib_no_such_module"])
    assert "colorsys" in sys.modules
    assert imported == ["colorsys", "arib_no_such_module"]  # each tried once


def test_warming_a_lane_imports_its_backend():
    lane = get_target("sqlite-file")
    warm(None, lane)
    assert lane.module in sys.modules


@pytest.mark.parametrize("check", load_checks(), ids=lambda c: c.id)
def test_every_preloaded_module_of_a_check_exists_on_the_pinned_sdk(check):
    for name in check.preload:
        assert importlib.util.find_spec(name) is not None, (check.id, name)


@pytest.mark.parametrize("lane", family_lanes(), ids=lambda t: t.name)
def test_every_preloaded_module_of_a_lane_exists(lane):
    for name in lane.preload:
        assert importlib.util.find_spec(name) is not None, (lane.name, name)
