"""Runs jobs in forked children: a hard timeout, crash containment, several at once.

The parent imports every dependency once and never runs an event loop itself, so each child
starts from a clean, loop-free copy (forking a process with a running asyncio loop leaves the
child with a loop it cannot use). A child sends its result back pickled through a pipe; a
child that hangs is killed, one that dies (segfault, ``os._exit``) is reported as a crash.
"""

from __future__ import annotations

import concurrent.futures.thread  # noqa: F401 - imported once in the parent, see below
import contextlib
import enum
import os
import pickle
import select
import signal
import sys
import tempfile
import time
import traceback
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

# Imported once here, in the parent, so that no child pays for them (each child would
# otherwise import anyio's asyncio backend and the thread pool afresh, ~55 ms a child).
import anyio._backends._asyncio  # noqa: F401

# In a child: the pipe its result goes to (None in the parent).
_RESULT_FD: int | None = None


class ChildStatus(str, enum.Enum):
    """How a child ended."""

    OK = "ok"
    TIMEOUT = "timeout"
    CRASH = "crash"
    RAISED = "raised"


@dataclass(frozen=True)
class ChildOutcome:
    """The value a child returned, or why it returned none."""

    status: ChildStatus
    value: Any = None
    detail: str = ""
    duration_s: float = 0.0


@dataclass
class _Running:
    index: int
    pid: int
    fd: int
    started: float
    chunks: list[bytes]


def _send(fd: int, payload: bytes) -> None:
    view = memoryview(payload)
    while view:
        written = os.write(fd, view)
        view = view[written:]
    os.close(fd)


def _child_main(job: Callable[[], Any], fd: int) -> None:
    global _RESULT_FD
    _RESULT_FD = fd
    try:
        payload = pickle.dumps((True, job()))
    except BaseException:  # noqa: BLE001 - report anything, the child ends right after
        payload = pickle.dumps((False, traceback.format_exc()))
    _send(fd, payload)


def in_child() -> bool:
    """True inside a child of run_jobs."""
    return _RESULT_FD is not None


def finish_early(value: Any) -> None:
    """In a child: send ``value`` as the job's result and end the process now.

    Used once a result is complete but the interpreter would still wait, e.g. for worker
    threads a mutant left blocked on a lock (an event loop joins them at shutdown). Outside
    a child this does nothing and the caller carries on.
    """
    if _RESULT_FD is None:
        return
    try:
        _send(_RESULT_FD, pickle.dumps((True, value)))
    finally:
        os._exit(0)


def _fork(job: Callable[[], Any]) -> tuple[int, int]:
    read_fd, write_fd = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    with warnings.catch_warnings():
        # Python 3.12+ warns when forking a process that has threads; the parent keeps none
        # of its own, and what a library may hold is not used by the child.
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:  # child
        os.close(read_fd)
        code = 0
        try:
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            # What a backend or mutant prints (warnings, thread noise after a loop closed)
            # goes to a file; the parent shows its tail only when the child crashed.
            err = os.open(_stderr_path(os.getpid()), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            os.dup2(err, 2)
            os.close(err)
            _child_main(job, write_fd)
        except BaseException:  # noqa: BLE001
            code = 70
        finally:
            os._exit(code)
    os.close(write_fd)
    return pid, read_fd


def _stderr_path(pid: int) -> str:
    return os.path.join(tempfile.gettempdir(), f"arib-child-{pid}.stderr")


def _stderr_tail(pid: int, limit: int = 1500) -> str:
    path = _stderr_path(pid)
    try:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            handle.seek(max(0, handle.tell() - limit))
            return handle.read().decode(errors="replace").strip()
    except OSError:
        return ""
    finally:
        with contextlib.suppress(OSError):
            os.unlink(path)


def _finish(run: _Running, timed_out: bool) -> ChildOutcome:
    duration = time.perf_counter() - run.started
    if timed_out:
        try:
            os.kill(run.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    _, status = os.waitpid(run.pid, 0)
    os.close(run.fd)
    stderr = _stderr_tail(run.pid)
    if timed_out:
        return ChildOutcome(ChildStatus.TIMEOUT, detail="killed after the hard timeout"
                            + (f"; stderr: {stderr}" if stderr else ""), duration_s=duration)
    data = b"".join(run.chunks)
    if data:
        try:
            ok, value = pickle.loads(data)
        except Exception as exc:  # noqa: BLE001
            return ChildOutcome(ChildStatus.CRASH, detail=f"unreadable result: {exc!r}",
                                duration_s=duration)
        if ok:
            return ChildOutcome(ChildStatus.OK, value=value, duration_s=duration)
        return ChildOutcome(ChildStatus.RAISED, detail=str(value), duration_s=duration)
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        detail = f"child died from signal {signal.Signals(sig).name}"
    else:
        detail = f"child exited with status {os.WEXITSTATUS(status)} without a result"
    if stderr:
        detail += f"; stderr: {stderr}"
    return ChildOutcome(ChildStatus.CRASH, detail=detail, duration_s=duration)


def run_jobs(
    jobs: Sequence[Callable[[], Any]],
    *,
    workers: int,
    timeout_s: float | Sequence[float],
    on_done: Callable[[int, ChildOutcome], None] | None = None,
    on_start: Callable[[int], None] | None = None,
) -> list[ChildOutcome]:
    """Run each job in its own forked child, ``workers`` at a time, in submission order.

    ``timeout_s`` is one hard timeout for every job, or one per job.
    """
    limits = ([float(timeout_s)] * len(jobs) if isinstance(timeout_s, (int, float))
              else [float(t) for t in timeout_s])
    outcomes: list[ChildOutcome | None] = [None] * len(jobs)
    pending = list(range(len(jobs)))
    running: dict[int, _Running] = {}
    try:
        while pending or running:
            while pending and len(running) < max(1, workers):
                index = pending.pop(0)
                pid, fd = _fork(jobs[index])
                running[fd] = _Running(index, pid, fd, time.perf_counter(), [])
                if on_start:
                    on_start(index)
            now = time.perf_counter()
            wait = min(r.started + limits[r.index] - now for r in running.values())
            ready, _, _ = select.select(list(running), [], [], max(0.0, min(wait, 1.0)))
            for fd in ready:
                chunk = os.read(fd, 1 << 16)
                if chunk:
                    running[fd].chunks.append(chunk)
                    continue
                run = running.pop(fd)
                outcomes[run.index] = _finish(run, timed_out=False)
                if on_done:
                    on_done(run.index, outcomes[run.index])  # type: ignore[arg-type]
            now = time.perf_counter()
            for fd, run in list(running.items()):
                if now - run.started > limits[run.index]:
                    running.pop(fd)
                    outcomes[run.index] = _finish(run, timed_out=True)
                    if on_done:
                        on_done(run.index, outcomes[run.index])  # type: ignore[arg-type]
    finally:
        for run in running.values():  # interrupted: leave no child behind
            try:
                os.kill(run.pid, signal.SIGKILL)
                os.waitpid(run.pid, 0)
            except (ProcessLookupError, ChildProcessError):
                pass
            os.close(run.fd)
            _stderr_tail(run.pid)
    return [o for o in outcomes if o is not None]


def run_one(job: Callable[[], Any], timeout_s: float) -> ChildOutcome:
    """Run one job in a forked child."""
    return run_jobs([job], workers=1, timeout_s=timeout_s)[0]
