"""Generated mutants installed by swapping one function's code: exact, or not done at all."""

from __future__ import annotations

import dataclasses
import importlib
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from arib.ground.child import ChildStatus, run_jobs
from arib.mutants.base import MutantSpec
from arib.mutants.generate import generate_from_source
from arib.targets.base import TargetSpec
from arib.targets.openai_agents.sdk import SQLITE_FILE
from arib.targets.registry import real_lanes
from tests.swapcheck import one_lane_per_module, swaps_are_exact

TOY = textwrap.dedent('''\
    from __future__ import annotations

    import functools


    def traced(fn):
        @functools.wraps(fn)
        def inner(*args, **kwargs):
            if len(args) > 0:
                return fn(*args, **kwargs)
            return None
        return inner


    def size_name(n):
        if n > 1:
            return "many"
        return "few"


    class Base:
        def kind(self):
            return "base"


    class Store(Base):
        def __init__(self):
            self.__items = []

        def kind(self):
            if len(self.__items) > 0:
                return "full " + super().kind()
            return "empty " + super().kind()

        @staticmethod
        def named(n):
            return size_name(n) if n >= 0 else "none"

        @traced
        def add(self, x):
            self.__items.append(x)
            return len(self.__items) > 1

        def count(self, limit=3):
            return min(len(self.__items), limit)


    DEFAULT_NAME = Store.named(0)
''')


@pytest.fixture
def toy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, Path]]:
    name = "arib_toy_swap"
    (tmp_path / f"{name}.py").write_text(TOY)
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.import_module(name)
    yield name, tmp_path
    sys.modules.pop(name, None)


def _mutants(name: str) -> tuple[MutantSpec, ...]:
    return generate_from_source(TOY, name, "toy", "Store",
                                ["flip_comparison", "early_return"]).mutants


def _behaviour(mutant: MutantSpec | None, name: str, swap: bool) -> dict[str, Any]:
    """In a child: install ``mutant`` (by swap or by re-executing the module), then use it."""
    if mutant is not None:
        mutant.apply() if swap else dataclasses.replace(mutant, swap=None).apply()
    module = sys.modules[name]
    store = module.Store()
    out: dict[str, Any] = {"empty": store.kind(), "named": [module.Store.named(n)
                                                            for n in (0, 5)]}
    out["add"] = [store.add(1), store.add(2)]
    out["full"] = store.kind()
    out["count"] = store.count()
    out["default"] = module.DEFAULT_NAME
    out["swapped"] = isinstance(module.Store.kind.__code__.co_filename, str) and (
        module.Store.kind.__code__.co_filename.startswith("<mutant"))
    return out


def test_each_swappable_mutant_behaves_as_the_reexecuted_module(toy: tuple[str, Path]) -> None:
    name, _ = toy
    mutants = _mutants(name)
    assert mutants
    jobs = [lambda m=m, s=s: _behaviour(m, name, s) for m in mutants for s in (True, False)]
    outcomes = run_jobs(jobs, workers=2, timeout_s=30)
    assert all(o.status is ChildStatus.OK for o in outcomes), [o.detail for o in outcomes]
    for index, mutant in enumerate(mutants):
        swapped, reexecuted = outcomes[2 * index].value, outcomes[2 * index + 1].value
        for key in ("empty", "named", "add", "full", "count", "default"):
            assert swapped[key] == reexecuted[key], (mutant.qualname, mutant.operator, key)
    (clean,) = run_jobs([lambda: _behaviour(None, name, True)], workers=1, timeout_s=30)
    assert clean.value["empty"] == "empty base" and clean.value["add"] == [False, True]
    # At least one mutant of each kind of unit changes what it returns.
    changed = {m.qualname for i, m in enumerate(mutants)
               if outcomes[2 * i].value != {**clean.value, "swapped": outcomes[2 * i].value[
                   "swapped"]}}
    assert {"Store.kind", "Store.add", "size_name"} <= changed


def test_only_functions_no_import_runs_are_swappable(toy: tuple[str, Path]) -> None:
    name, _ = toy
    by_unit: dict[str, set[bool]] = {}
    for mutant in _mutants(name):
        unit = mutant.qualname.split(".<locals>")[0]
        by_unit.setdefault(unit, set()).add(mutant.swap is not None)
    # `traced` decorates `add`, `named` is called by DEFAULT_NAME = ... and calls
    # `size_name`, all while the module is imported: only re-executing the module runs
    # their mutated code there.
    assert by_unit["traced"] == by_unit["Store.named"] == by_unit["size_name"] == {False}
    assert by_unit["Store.kind"] == by_unit["Store.add"] == {True}


def test_a_swap_that_would_not_be_exact_changes_nothing(toy: tuple[str, Path]) -> None:
    from arib.mutants.hook import serve_mutated_function

    name, tmp_path = toy
    mutant = next(m for m in _mutants(name) if m.qualname == "Store.kind" and m.swap)
    assert mutant.swap is not None
    path = str(tmp_path / f"{name}.py")
    module = sys.modules[name]
    before = module.Store.kind.__code__
    # A different first line (the unit was moved), a module not imported: refused.
    moved = dataclasses.replace(mutant.swap, text="\n" + mutant.swap.text)
    assert not serve_mutated_function(name, mutant.source or "", moved)
    assert not serve_mutated_function("arib_not_imported_module", mutant.source or "",
                                       mutant.swap)
    assert module.Store.kind.__code__ is before
    assert not any(type(f).__name__ == "MutantFinder" for f in sys.meta_path)
    assert Path(path).read_text() == TOY


@pytest.mark.parametrize("lane", one_lane_per_module(real_lanes()),
                         ids=lambda lane: lane.name)
def test_every_mutant_swaps_the_code_the_mutated_module_compiles_to(lane: TargetSpec) -> None:
    """The code swapped in equals, instruction for instruction, the function's code in the
    whole mutated module, for every generated mutant of every backend."""
    total, swappable = swaps_are_exact(lane)
    assert swappable
    if lane is SQLITE_FILE:
        assert swappable == total  # SQLiteSession's units all qualify
