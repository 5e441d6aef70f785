"""The line recorder (threads, forks killed with SIGKILL, agreement with coverage.py) and the
mapping of a mutant's change to lines of the original module."""

from __future__ import annotations

import asyncio
import importlib
import importlib.util
import os
import signal
import sys
from pathlib import Path
from types import ModuleType

import pytest

from arib.mutants.generate import generate_from_source
from arib.survey.coverage import (
    ModuleLines,
    executable_lines,
    from_ranges,
    read_record,
    recording,
    to_ranges,
)

WORKLOAD = '''\
import asyncio


def in_main(x):
    y = x + 1  # MAIN
    return y


def in_thread(x):
    y = x * 2  # THREAD
    return y


def never(x):
    y = x - 1  # NEVER
    return y


def in_fork():
    value = 41  # FORK
    return value + 1


async def run():
    a = in_main(1)
    b = await asyncio.to_thread(in_thread, 2)
    return a + b
'''


def line_of(marker: str) -> int:
    return next(i for i, text in enumerate(WORKLOAD.splitlines(), 1) if f"# {marker}" in text)


@pytest.fixture()
def workload(tmp_path: Path) -> ModuleType:
    path = tmp_path / "arib_cov_workload.py"
    path.write_text(WORKLOAD)
    spec = importlib.util.spec_from_file_location("arib_cov_workload", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_lines_run_only_in_a_worker_thread_are_recorded(workload: ModuleType,
                                                        tmp_path: Path) -> None:
    record = tmp_path / "record"
    with recording(str(workload.__file__), record):
        assert asyncio.run(workload.run()) == 6
    got = read_record(record, str(workload.__file__))
    assert got.error is None
    assert line_of("MAIN") in got.lines
    assert line_of("THREAD") in got.lines  # ran in asyncio.to_thread's worker only
    assert line_of("NEVER") not in got.lines
    assert line_of("THREAD") + 1 in got.lines and line_of("NEVER") + 1 not in got.lines


def test_a_forked_process_killed_with_sigkill_keeps_its_lines(workload: ModuleType,
                                                              tmp_path: Path) -> None:
    record = tmp_path / "record"
    read_fd, write_fd = os.pipe()
    with recording(str(workload.__file__), record):
        pid = os.fork()
        if pid == 0:  # the child: run a line, say so, then wait to be killed
            try:
                workload.in_fork()
                os.write(write_fd, b"x")
                signal.pause()
            finally:
                os._exit(0)
        assert os.read(read_fd, 1) == b"x"
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    os.close(read_fd)
    os.close(write_fd)
    got = read_record(record, str(workload.__file__))
    assert line_of("FORK") in got.lines  # written at once, so the kill could not lose it
    assert line_of("MAIN") not in got.lines


def test_the_recorder_agrees_with_coverage_py(workload: ModuleType, tmp_path: Path) -> None:
    import coverage

    filename = str(workload.__file__)
    cov = coverage.Coverage(data_file=None, include=[filename], config_file=False)
    cov.start()
    try:
        asyncio.run(workload.run())
    finally:
        cov.stop()
    theirs = set(cov.get_data().lines(filename) or ())
    module_level = {i for i, text in enumerate(WORKLOAD.splitlines(), 1)
                    if text and not text.startswith((" ", "\t"))}
    record = tmp_path / "record"
    with recording(filename, record):
        asyncio.run(workload.run())
    ours = read_record(record, filename).lines
    # The module was imported before both runs, so its top-level lines ran for neither.
    assert ours == theirs - module_level
    assert ours  # and something was measured


def test_read_record_names_what_went_wrong(tmp_path: Path) -> None:
    missing = read_record(tmp_path / "none", "/x.py")
    assert missing.error is not None and "no coverage record" in missing.error
    (tmp_path / "bad").write_text("error no free sys.monitoring tool id\n")
    assert "could not start: no free" in (read_record(tmp_path / "bad", "/x.py").error or "")
    (tmp_path / "silent").write_text("12\n")
    assert "never started" in (read_record(tmp_path / "silent", "/x.py").error or "")
    (tmp_path / "other").write_text("start /y.py\n12\n")
    assert "watched '/y.py'" in (read_record(tmp_path / "other", "/x.py").error or "")
    (tmp_path / "ok").write_text("start /x.py\n12\n7\n12\n")
    assert read_record(tmp_path / "ok", "/x.py").lines == {7, 12}


def test_a_torn_line_of_a_killed_worker_is_skipped_not_a_crash(tmp_path: Path) -> None:
    # seen in `official --mutants`: "code 326code 88 /lib/b.py" (a forked writer killed with
    # SIGKILL mid-write, the next writer's line glued to it) raised ValueError in the parent
    (tmp_path / "torn").write_text("start /x.py\n12\ncode 326code 88 /lib/b.py\n"
                                   "code 40 /lib/a.py\ncode 41\nend\n")
    got = read_record(tmp_path / "torn", "/x.py")
    assert got.error is None and got.lines == {12}
    assert got.executed is not None and got.executed.functions == {("/lib/a.py", 40)}


def test_ranges_round_trip() -> None:
    assert to_ranges([7, 1, 2, 3, 9, 10]) == "1-3,7,9-10"
    assert to_ranges([]) == ""
    assert from_ranges("1-3,7,9-10") == {1, 2, 3, 7, 9, 10}
    assert from_ranges(to_ranges(range(5, 40, 3))) == set(range(5, 40, 3))


BACKEND = '''\
class Store:
    async def add(self, item):
        """Add one item."""
        if self._closed:
            raise RuntimeError("closed")
        self.items.append(item)
        self.conn.commit()

    async def read(self, limit):
        async def query():
            nonlocal limit
            return self.conn.execute(
                """
                SELECT data FROM t
                ORDER BY id ASC
                """
            )

        return await query()

    async def count(self):
        return len(self.items)

    async def trim(self, limit):
        while len(self.items) > limit:
            self.items.pop()
'''


def line(text: str) -> int:
    return next(i for i, row in enumerate(BACKEND.splitlines(), 1) if text in row)


@pytest.fixture(scope="module")
def mapped() -> dict[tuple[str, str], frozenset[int] | None]:
    report = generate_from_source(BACKEND, "store", "store-lane", "Store")
    lines = ModuleLines(BACKEND)
    out = {}
    for m in report.mutants:
        assert (m.qualname, m.operator) not in out, "the table needs one mutant per key"
        out[(m.qualname, m.operator)] = lines.mutant_lines(m)
    return out


# (qualified name, operator) -> the lines of the original its change maps to
TABLE = [
    # a guard removed: the if statement's lines (its header runs whenever it is reached)
    ("Store.add", "drop_closed_guard", ['if self._closed:', 'raise RuntimeError("closed")']),
    # a removed commit: its own line
    ("Store.add", "drop_commit", ["self.conn.commit()"]),
    # an insertion after the docstring: the statement it lands before
    ("Store.add", "early_return", ['if self._closed:', 'raise RuntimeError("closed")']),
    # an insertion before a nested def: the def statement itself, not the nested body
    ("Store.read", "early_return", ["async def query():"]),
    # an insertion before "nonlocal" (no bytecode): the statement control reaches next
    ("Store.read.<locals>.query", "early_return", ["return self.conn.execute(", '"""', ")"]),
    # an insertion before "return x": the diff overlaps the word "return", same statement
    ("Store.count", "early_return", ["return len(self.items)"]),
    # a flipped loop condition: the loop (its header runs whenever it is reached)
    ("Store.trim", "flip_comparison", ["while len(self.items) > limit:", "self.items.pop()"]),
    # a dropped await: the statement that holds it
    ("Store.read", "drop_await", ["return await query()"]),
]


def _executable(rows: list[str]) -> frozenset[int]:
    found = set()
    for text in rows:
        found.update(i for i, row in enumerate(BACKEND.splitlines(), 1) if row.strip() == text
                     or text in row and len(text) > 3)
    return frozenset(found) & executable_lines(BACKEND)


@pytest.mark.parametrize("qualname, operator, rows", TABLE,
                         ids=[f"{op}:{q}" for q, op, _ in TABLE])
def test_a_mutant_maps_to_the_lines_of_its_statement(mapped, qualname, operator,  # type: ignore[no-untyped-def]
                                                     rows) -> None:
    got = mapped[(qualname, operator)]
    assert got is not None
    assert got == _executable(rows), (qualname, operator, sorted(got))


def test_a_change_inside_a_multiline_string_maps_to_its_statement(mapped) -> None:  # type: ignore[no-untyped-def]
    got = mapped[("Store.read.<locals>.query", "swap_order")]
    assert got is not None
    assert line("ORDER BY id ASC") not in got  # no bytecode sits on a string's inner line
    assert line("return self.conn.execute(") in got
    assert got <= executable_lines(BACKEND)
    assert got == mapped[("Store.read.<locals>.query", "early_return")]


def test_a_change_outside_any_statement_is_unmapped() -> None:
    from arib.ground.model import MutantKind
    from arib.mutants.base import MutantSpec

    source = "# a comment only\nx = 1\n"
    spec = MutantSpec("m-000000000000", MutantKind.GENERATED, "lane", "mod", "nothing",
                      "flip_comparison", "# a comment only", "# a comment, changed",
                      "a change in a comment", source=source.replace("only", "changed"))
    assert ModuleLines(source).mutant_lines(spec) is None


@pytest.mark.skipif(sys.version_info < (3, 12), reason="sys.monitoring needs Python 3.12+")
def test_a_busy_monitoring_tool_id_is_named(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from arib.survey.coverage import CoverageError

    monitoring = sys.monitoring
    taken = []
    for tool in (monitoring.COVERAGE_ID, 3, 4):
        if monitoring.get_tool(tool) is None:
            monitoring.use_tool_id(tool, "test-holder")
            taken.append(tool)
    try:
        with pytest.raises(CoverageError, match="no free sys.monitoring tool id"), \
                recording("/x.py", tmp_path / "record"):
            pass
    finally:
        for tool in taken:
            monitoring.free_tool_id(tool)


def test_installed_functions_that_start_are_recorded_by_file_and_first_line(
        workload: ModuleType, tmp_path: Path) -> None:
    from pydantic.version import version_short

    record = tmp_path / "record"
    with recording(str(workload.__file__), record):
        version_short()
        workload.in_main(1)
    text = record.read_text()
    code = version_short.__code__
    assert f"code {code.co_firstlineno} {code.co_filename}\n" in text
    assert str(workload.__file__) not in text.replace(f"start {workload.__file__}", "")
    # a record without its end mark names no inputs (the run may have stopped half way)
    assert read_record(record, str(workload.__file__)).executed is None
    record.write_text(text + f"ext {tmp_path}/x.so\nend\ncode 1 {tmp_path}/after_the_end.py\n")
    got = read_record(record, str(workload.__file__)).executed
    assert got is not None and (code.co_filename, code.co_firstlineno) in got.functions
    assert got.extensions == {f"{tmp_path}/x.so"}
    assert all("after_the_end" not in f for f, _ in got.functions)


def test_a_clean_run_in_a_child_ends_its_record_also_when_it_delivers_early(
        tmp_path: Path) -> None:
    from arib.checks.registry import get_check
    from arib.execute import RunOptions
    from arib.ground.child import ChildStatus, run_jobs
    from arib.survey.coverage import covered_run
    from arib.targets.openai_agents.reference import REFERENCE

    check = get_check("ARIB-CONC-001")
    opts = RunOptions(params=check.resolve_params({"writers": 2, "appends": 2, "trials": 1}))
    module = sys.modules[REFERENCE.module] if REFERENCE.module in sys.modules else (
        importlib.import_module(REFERENCE.module))
    record = tmp_path / "record"
    (out,) = run_jobs([lambda: covered_run(check, REFERENCE, opts, str(record),
                                           str(module.__file__))], workers=1, timeout_s=60)
    assert out.status is ChildStatus.OK
    got = read_record(record, str(module.__file__))
    assert got.lines and got.executed is not None
    assert any("/anyio/" in f for f, _ in got.executed.functions)  # the check ran on anyio


def test_what_only_the_claims_probe_runs_is_not_counted_as_reached(
        workload: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Mutant runs skip the claims probe; the coverage run must not credit its lines either.
    import arib.execute
    from arib.checks.registry import get_check
    from arib.execute import RunOptions
    from arib.ground.child import ChildStatus, run_jobs
    from arib.survey.coverage import covered_run
    from arib.targets.openai_agents.reference import REFERENCE

    async def probe(*args: object, **kwargs: object) -> None:
        workload.never(1)  # stands for code only the probe reaches
        return None

    monkeypatch.setattr(arib.execute, "probe_claims", probe)
    check = get_check("ARIB-CONC-001")
    opts = RunOptions(params=check.resolve_params({"writers": 2, "appends": 2, "trials": 1}))
    record = tmp_path / "record"
    (out,) = run_jobs([lambda: covered_run(check, REFERENCE, opts, str(record),
                                           str(workload.__file__))], workers=1, timeout_s=60)
    assert out.status is ChildStatus.OK and out.value.verdict.value == "held"
    got = read_record(record, str(workload.__file__))
    assert got.error is None and line_of("NEVER") not in got.lines
