"""Which lines of a lane's backend module each check executes, and which lines a mutant changes.

**Recording.** The clean run of a check on a lane runs in a forked child (``covered_run``);
before the check starts, a recorder is switched on there. The first time a line of the
backend module's file runs, in any thread of the child (``SQLiteSession`` works in
``asyncio.to_thread`` workers) or in a process the child forks (the workers of
ARIB-MULTI-001, the writer ARIB-DUR-001 kills with SIGKILL), its number is appended at once
to a record file; the parent reads the file after the child has ended, however it ended.
On Python 3.12+ the recorder uses ``sys.monitoring`` LINE events (each location reports
once, then is disabled, so the rest of the run pays nothing); on 3.10 and 3.11 it uses
``sys.settrace`` and ``threading.settrace``, tracing only frames of that file.

coverage.py is not used for this: it keeps what it measured in the process's memory and
writes it out when the process exits, so a writer killed with SIGKILL would take its lines
with it. The tests compare this recorder with coverage.py on the same code.

**Mapping.** A generated mutant changes one site node of the original module (its
``original`` snippet), located the way the mutation report locates it
(``arib.reports.mutation.site_span``). Its lines are the executable lines of the innermost
statement that holds the site: when that statement runs, the site is reached, and the other
way round. A pure insertion (``early_return``) maps to the statement it lands before. A
mutant that cannot be mapped (no statement holds it, no executable line) maps to ``None``
and is judged by every check, never dropped.
"""

from __future__ import annotations

import ast
import contextlib
import os
import sys
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import CodeType, FrameType
from typing import Any

from arib.caches.inputs import Executed, installed_file, loaded_extensions
from arib.checks.base import CheckSpec
from arib.execute import RunOptions, claims_beforehand, run_check
from arib.ground.child import before_result, in_child
from arib.ground.errors import BenchError
from arib.ground.model import Finding
from arib.mutants.base import MutantSpec
from arib.reports.mutation import SourceText, changed_span, site_span
from arib.targets.base import TargetSpec

TOOL_NAME = "arib-coverage"


class CoverageError(BenchError):
    """The line recorder could not start (no free sys.monitoring tool id, no record file)."""


class _Recorder:
    """Appends each line of one file to ``fd`` the first time it runs (any thread, any fork),
    and each installed third-party function the first time it starts (``code FILE LINE``)."""

    def __init__(self, filename: str, fd: int) -> None:
        self.filename = filename
        self.fd = fd
        self.seen: set[int] = set()
        self.started: set[CodeType] = set()
        self.installed = installed_file  # bound here: module globals are gone at exit
        self.tool: int | None = None

    def _hit(self, line: int) -> None:
        if line not in self.seen:
            self.seen.add(line)
            os.write(self.fd, b"%d\n" % line)

    def _start(self, code: CodeType) -> None:
        if code not in self.started:
            self.started.add(code)
            if self.installed(code.co_filename):
                os.write(self.fd, f"code {code.co_firstlineno} {code.co_filename}\n".encode())

    # -- sys.monitoring (3.12+) -------------------------------------------------------------

    def _on_line(self, code: CodeType, line: int) -> Any:
        if code.co_filename == self.filename:
            self._hit(line)
        return sys.monitoring.DISABLE  # type: ignore[attr-defined]

    def _on_start(self, code: CodeType, offset: int) -> Any:
        self._start(code)
        return sys.monitoring.DISABLE  # type: ignore[attr-defined]

    # -- sys.settrace (3.10, 3.11) ----------------------------------------------------------

    def _local(self, frame: FrameType, event: str, arg: Any) -> Any:
        if event == "line":
            self._hit(frame.f_lineno)
        return self._local

    def _global(self, frame: FrameType, event: str, arg: Any) -> Any:
        self._start(frame.f_code)
        if frame.f_code.co_filename == self.filename:
            return self._local
        return None

    def start(self) -> None:
        monitoring = getattr(sys, "monitoring", None)
        if monitoring is None:
            sys.settrace(self._global)
            threading.settrace(self._global)
            return
        free = [t for t in (monitoring.COVERAGE_ID, 3, 4) if monitoring.get_tool(t) is None]
        if not free:
            raise CoverageError(
                "no free sys.monitoring tool id (tried COVERAGE_ID, 3, 4): another tool (a "
                "debugger, coverage.py, a profiler) holds them all; run the survey without it"
            )
        self.tool = free[0]
        monitoring.use_tool_id(self.tool, TOOL_NAME)
        monitoring.register_callback(self.tool, monitoring.events.LINE, self._on_line)
        monitoring.register_callback(self.tool, monitoring.events.PY_START, self._on_start)
        monitoring.set_events(self.tool, monitoring.events.LINE | monitoring.events.PY_START)
        monitoring.restart_events()  # locations an earlier recorder disabled report again

    def stop(self) -> None:
        if self.tool is None:
            sys.settrace(None)
            threading.settrace(None)  # type: ignore[arg-type]
            return
        monitoring = sys.monitoring  # type: ignore[attr-defined]
        monitoring.set_events(self.tool, 0)
        monitoring.register_callback(self.tool, monitoring.events.LINE, None)
        monitoring.register_callback(self.tool, monitoring.events.PY_START, None)
        monitoring.free_tool_id(self.tool)
        self.tool = None


def _open_record(path: str | Path) -> int:
    return os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)


@contextlib.contextmanager
def recording(filename: str, record: str | Path) -> Iterator[None]:
    """Record into ``record`` the lines of ``filename`` that run inside this block."""
    fd = _open_record(record)
    recorder = _Recorder(filename, fd)
    try:
        recorder.start()
        try:
            os.write(fd, f"start {filename}\n".encode())
            yield
        finally:
            recorder.stop()
    finally:
        os.close(fd)


def covered_run(check: CheckSpec, lane: TargetSpec, opts: RunOptions, record: str,
                filename: str) -> Finding:
    """In a child: the clean run of ``check`` on ``lane``, recording the lines of ``filename``.

    The lane's claims are verified first, unrecorded (``claims_beforehand``). The record
    file gets ``start FILE`` once the recorder runs, then one line number per line the first
    time it runs, or ``error REASON`` when the recorder could not start (the check still runs,
    so its verdict is known). The process ends after the run: the recorder is never switched
    off, and forked workers keep recording until they end.
    """
    try:
        fd = _open_record(record)
    except OSError as exc:
        raise CoverageError(f"cannot open the coverage record {record!r}: {exc}") from exc
    opts, false_claim = claims_beforehand(check, lane, opts)  # not recorded: see there
    if false_claim is not None:  # the check never ran: a whole record of nothing
        os.write(fd, f"start {filename}\nend\n".encode())
        return false_claim
    try:
        _Recorder(filename, fd).start()
        os.write(fd, f"start {filename}\n".encode())
    except Exception as exc:  # noqa: BLE001 - reported in the record, read by the parent
        os.write(fd, f"error {exc}\n".encode())
    ended: list[bool] = []

    def end() -> None:  # the extension modules loaded by now, then: the record is whole
        if not ended:
            ended.append(True)
            os.write(fd, "".join(f"ext {f}\n" for f in loaded_extensions()).encode() + b"end\n")

    if in_child():
        before_result(end)  # a child delivers its finding (and exits) inside run_check
    finding = run_check(check, lane, opts)
    end()
    return finding


@dataclass(frozen=True)
class Record:
    """What one recorded run left: the lines that ran, or why nothing was recorded."""

    lines: frozenset[int]
    error: str | None = None
    # What ran in installed distributions; None when the run never reached its end mark.
    executed: Executed | None = None


def read_record(path: str | Path, filename: str) -> Record:
    """The lines a record file holds; ``error`` says why the record cannot be trusted."""
    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        return Record(frozenset(), f"no coverage record ({exc.strerror or exc})")
    lines: set[int] = set()
    functions: set[tuple[str, int]] = set()
    extensions: set[str] = set()
    started = ended = False
    for raw in text.splitlines():
        if raw.startswith("error "):
            return Record(frozenset(), f"the line recorder could not start: {raw[6:]}")
        if raw.startswith("start "):
            if raw[6:] != filename:
                return Record(frozenset(), f"the recorder watched {raw[6:]!r}, not "
                                           f"{filename!r}")
            started = True
        elif raw.startswith("code ") and not ended:  # after the end: the child's exit
            line, _, where = raw[5:].partition(" ")
            # A forked worker killed by the check (SIGKILL) can leave its last line torn
            # (a short write at a page boundary) and the next writer's line glued to it:
            # such a line names no function that ran, it is skipped, never a crash.
            if line.isdigit() and where:
                functions.add((where, int(line)))
        elif raw.startswith("ext ") and not ended:
            extensions.add(raw[4:])
        elif raw == "end":
            ended = True
        elif raw.strip().isdigit():
            lines.add(int(raw))
    if not started:
        return Record(frozenset(), "the line recorder never started in the child")
    return Record(frozenset(lines), None, Executed(frozenset(functions), frozenset(extensions))
                  if ended else None)


# ------------------------------------------------------------------------------ line ranges


def to_ranges(lines: Iterable[int]) -> str:
    """``{1, 2, 3, 7}`` -> ``"1-3,7"`` (the compact form the survey JSON records)."""
    out: list[str] = []
    run: list[int] = []
    for line in sorted(set(lines)):
        if run and line == run[-1] + 1:
            run.append(line)
            continue
        if run:
            out.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
        run = [line]
    if run:
        out.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
    return ",".join(out)


def from_ranges(text: str) -> frozenset[int]:
    """The inverse of ``to_ranges``."""
    lines: set[int] = set()
    for part in filter(None, text.split(",")):
        first, _, last = part.partition("-")
        lines.update(range(int(first), int(last or first) + 1))
    return frozenset(lines)


# ------------------------------------------------------------------------------ the mapping


def executable_lines(source: str, filename: str = "<module>") -> frozenset[int]:
    """Every line that holds bytecode in ``source`` (nested functions included)."""
    lines: set[int] = set()
    pending = [compile(source, filename, "exec", dont_inherit=True)]
    while pending:
        code = pending.pop()
        lines.update(line for _, _, line in code.co_lines() if line is not None)
        pending.extend(c for c in code.co_consts if isinstance(c, CodeType))
    return frozenset(lines)


_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


class ModuleLines:
    """The original module of a lane: its executable lines and each mutant's lines."""

    def __init__(self, source: str, filename: str = "<module>") -> None:
        self.src = SourceText(source)
        self.executable = executable_lines(source, filename)
        tree = self.src.tree
        self.statements: list[ast.stmt] = [
            node for node in ast.walk(tree) if isinstance(node, ast.stmt)
        ] if tree is not None else []
        # Lanes built on one module share its mutants (same id, same source): mapped once.
        self._mapped: dict[tuple[str, str | None], frozenset[int] | None] = {}

    def _line(self, offset: int) -> int:
        return self.src.position(offset)["line"]

    def _lines_of(self, node: ast.stmt, inside: bool = True) -> frozenset[int]:
        """Executable lines of ``node``; of a def: its body when ``inside`` it, else the def."""
        first, last = node.lineno, node.end_lineno or node.lineno
        if isinstance(node, _DEFS):
            body = [s for s in node.body if not _is_docstring(s)] or node.body
            if inside:  # the body runs when the function is called
                first, last = body[0].lineno, body[-1].end_lineno or body[-1].lineno
            else:  # the def statement itself runs when it is reached (decorators first)
                first = min([d.lineno for d in node.decorator_list] + [node.lineno])
                last = max(first, body[0].lineno - 1)
        return frozenset(line for line in self.executable if first <= line <= last)

    def _innermost(self, first: int, last: int) -> ast.stmt | None:
        holding = [s for s in self.statements
                   if s.lineno <= first and (s.end_lineno or s.lineno) >= last]
        return min(holding, key=lambda s: (s.end_lineno or s.lineno) - s.lineno,
                   default=None)

    def _landing(self, at: int, scope: tuple[int, int] | None) -> frozenset[int] | None:
        """The lines of the statement an insertion at offset ``at`` lands before, in ``scope``.

        The changed span of an insertion is pushed as far right as the texts agree, so it
        may sit inside the first line of that statement (``return None`` inserted before
        ``return x``): the first statement that starts on the line of ``at`` or later and
        holds bytecode (a ``nonlocal`` holds none; control passes on to the next one).
        """
        line_start = self.src.text.rfind("\n", 0, at) + 1
        after = []
        for stmt in self.statements:
            start = self.src.offset(stmt.lineno, stmt.col_offset)
            if start >= line_start and (scope is None or scope[0] < start < scope[1]):
                after.append((start, stmt))
        for _, stmt in sorted(after, key=lambda pair: pair[0]):
            lines = self._lines_of(stmt, inside=False)
            if lines:
                return lines
        return None

    def mutant_lines(self, spec: MutantSpec) -> frozenset[int] | None:
        """The executable lines whose running reaches the mutant's change; None: unmapped."""
        key = (spec.id, spec.source)
        if key not in self._mapped:
            self._mapped[key] = self._mutant_lines(spec)
        return self._mapped[key]

    def _mutant_lines(self, spec: MutantSpec) -> frozenset[int] | None:
        if spec.source is None or self.src.tree is None:
            return None
        site = site_span(self.src, spec)
        if site is not None:
            lo, hi = site
        else:
            changed = changed_span(self.src.text, spec.source)
            if changed is None:
                return None
            (lo, hi), _ = changed
        text = self.src.text
        while lo < hi and text[lo].isspace():  # where the diff aligned, not what changed
            lo += 1
        while hi > lo and text[hi - 1].isspace():
            hi -= 1
        if lo == hi:  # a pure insertion: it runs when the statement it lands before runs
            return self._landing(lo, self.src.def_span(spec.qualname))
        stmt = self._innermost(self._line(lo), self._line(hi - 1))
        return None if stmt is None else self._lines_of(stmt) or None


def _is_docstring(stmt: ast.stmt) -> bool:
    return (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)
            and isinstance(stmt.value.value, str))
