"""arib.survey.guards: which lines a lane's fixed guards rule out, and how a false guard shows."""

from __future__ import annotations

import importlib
import textwrap
from types import SimpleNamespace

import pytest

from arib.survey.guards import excluded_lines, executed_excluded, guard_problem, normalize
from arib.targets.base import FixedGuard
from arib.targets.registry import get_target

MEMORY = FixedGuard("self._memory", True, "built on ':memory:'")
NO_LOCK = FixedGuard("self._lock_path is not None", False, "no file lock")

SOURCE = textwrap.dedent('''\
    class S:
        def __init__(self):
            if self._memory:
                self.conn = 1
            else:
                self._take_lock()
            if self._lock_path is not None and self.other:
                self._free_lock()

        def _take_lock(self):
            return 2

        def _free_lock(self):
            return 3

        def read(self):
            if not self._memory:
                return 4
            return 5

        def write(self):
            if self._memory:
                return 6
            x = 7
            return x

        def mixed(self):
            if self._memory or self.flag:
                return 8
            return 9
    ''')


@pytest.mark.parametrize(("line", "excluded"), [
    (3, False),   # the guard's own test runs
    (4, False),   # the branch it keeps
    (6, True),    # the branch it drops
    (8, True),    # and-ed with a guard fixed False
    (11, True),   # a private function called only from dropped lines
    (14, True),
    (18, True),   # `not guard`
    (19, False),
    (24, True),   # after an if whose kept branch returns
    (25, True),
    (29, False),  # `guard or x` is True: its body is kept
    (30, True),   # ... and what follows it is dropped
])
def test_excluded_lines_before_after(line: int, excluded: bool) -> None:
    found = excluded_lines(SOURCE, (MEMORY, NO_LOCK))
    assert (line in found.lines) is excluded


def test_no_guards_rule_out_nothing() -> None:
    assert excluded_lines(SOURCE, ()).lines == {}


def test_a_guard_the_code_never_tests_rules_out_nothing() -> None:
    assert excluded_lines(SOURCE, (FixedGuard("self._nowhere", True, "-"),)).lines == {}


def test_guard_of_needs_every_line_ruled_out() -> None:
    found = excluded_lines(SOURCE, (MEMORY,))
    assert found.guard_of([6]) == MEMORY
    assert found.guard_of([4, 6]) is None
    assert found.guard_of([]) is None


def test_normalize_ignores_quotes_and_spacing() -> None:
    assert normalize("self.d.name!='sqlite'") == normalize('self.d.name != "sqlite"')


def test_guard_problem_names_a_false_guard() -> None:
    lane = get_target("sqlite-memory")
    problem = guard_problem(lane, SimpleNamespace(_is_memory_db=False, _lock_path=None))
    assert problem is not None
    assert "'self._is_memory_db'" in problem and "sqlite-memory" in problem
    assert "fixed_guards" in problem


def test_guard_problem_names_a_guard_the_object_cannot_answer() -> None:
    problem = guard_problem(get_target("sqlite-memory"), SimpleNamespace())
    assert problem is not None and "cannot be evaluated" in problem


def test_executed_excluded_line_is_a_false_guard() -> None:
    found = excluded_lines(SOURCE, (MEMORY,))
    lane = get_target("sqlite-memory")
    assert executed_excluded(found, lane, {"ARIB-X-001": frozenset({3, 4})}) is None
    problem = executed_excluded(found, lane, {"ARIB-X-001": frozenset({3, 6})})
    assert problem is not None and "ARIB-X-001" in problem and "[6]" in problem


def test_sqlite_memory_guards_hold_on_a_real_instance() -> None:
    from agents.memory.sqlite_session import SQLiteSession

    session = SQLiteSession("guards", ":memory:")
    try:
        assert guard_problem(get_target("sqlite-memory"), session) is None
        assert guard_problem(get_target("sqlite-file"), session) is not None
    finally:
        session.close()


def test_sqlite_memory_rules_out_the_file_lock_functions() -> None:
    lane = get_target("sqlite-memory")
    module = importlib.import_module(lane.module)
    with open(str(module.__file__), encoding="utf-8") as handle:
        source = handle.read()
    found = excluded_lines(source, lane.fixed_guards)
    lines = source.splitlines()
    for name in ("_acquire_file_lock", "_release_file_lock"):
        (at,) = [i + 1 for i, text in enumerate(lines) if f"def {name}(" in text]
        assert at + 2 in found.lines, name  # its body (after the docstring) is ruled out
