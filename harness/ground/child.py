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
import threading
import time
import traceback
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

# Imported once here, in the parent, so that no child pays for them (each child would
# otherwise import anyio's asyncio backend and the thread pool afresh, ~55 ms a child).
import anyio._backends._asyncio  # noqa: F401

from arib.ground import interrupts, proctime, scratch
from arib.ground.errors import BenchError

# In a child: the pipe its result goes to (None in the parent).
_RESULT_FD: int | None = None
# Held by whoever delivers the child's result: the job's return, finish_early or a watchdog
# thread; the first one ends the process, so a second never writes into the same pipe.
_DELIVERY = threading.Lock()

# A running child that has used (almost) no CPU for STALL_WINDOW_S, once it has run a tenth
# of its time limit (at least STALL_AFTER_S), is waiting (a lock, a busy database) and no
# longer holds a worker's core; at most STALLED_PER_WORKER such children per worker run
# beside the active ones.
STALL_AFTER_S = 0.15
STALL_AFTER_SHARE = 0.1
STALL_WINDOW_S = 0.1
STALL_MAX_CPU_SHARE = 0.1
STALLED_PER_WORKER = 2
_CLOCK_TICK_S = 1.0 / os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 0.01


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
    sampled_at: float = 0.0
    cpu_s: float | None = None
    stalled: bool = False


def _cpu_seconds(pid: int) -> float | None:
    """User + system CPU time of a process and all its threads (Linux); None elsewhere."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            fields = handle.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return None
    # After the command name: state is field 3, utime field 14, stime field 15.
    return (int(fields[11]) + int(fields[12])) * _CLOCK_TICK_S


def _runnable(pid: int) -> bool:
    """True when a thread of the process is running or waiting for a CPU (state R, Linux).

    On a loaded machine a computing child gets little CPU but stays runnable; a child that
    waits on a lock or a socket sleeps. Unknown (no /proc) counts as runnable.
    """
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return True
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/stat", "rb") as handle:
                state = handle.read().rsplit(b")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state == b"R":
            return True
    return False


def _sample_stall(run: _Running, now: float, limit_s: float, share: float) -> None:
    """Mark ``run`` stalled when it used almost no CPU over the last sampling window and no
    thread of it is runnable now (a child starved of CPU by load is computing, not waiting);
    never before it ran ``share`` of its limit ``limit_s`` (and at least STALL_AFTER_S)."""
    if (now - run.started < max(STALL_AFTER_S, share * limit_s)
            or now - run.sampled_at < STALL_WINDOW_S):
        return
    cpu = _cpu_seconds(run.pid)
    if cpu is None:
        return
    if run.cpu_s is not None:
        idle = (cpu - run.cpu_s) <= STALL_MAX_CPU_SHARE * (now - run.sampled_at)
        run.stalled = idle and not _runnable(run.pid)
    run.cpu_s, run.sampled_at = cpu, now


# Called in a child just before its job's result is sent, however it is sent.
_BEFORE_SEND: list[Callable[[], None]] = []


def before_result(fn: Callable[[], None]) -> None:
    """In a child: call ``fn`` once, just before the job's result is sent (also when a check
    delivers early with ``finish_early``); what it raises is ignored."""
    _BEFORE_SEND.append(fn)


def _send(fd: int, payload: bytes) -> None:
    while _BEFORE_SEND:
        with contextlib.suppress(Exception):
            _BEFORE_SEND.pop(0)()
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
    with _DELIVERY:
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
    payload = pickle.dumps((True, value))
    _DELIVERY.acquire()  # never released: the process ends here
    try:
        _send(_RESULT_FD, payload)
    finally:
        os._exit(0)


class Watchdog:
    """In a child: deliver ``make_value()`` and end the process if not cancelled in time.

    For a deadline the event loop cannot enforce: a cancelled task whose worker thread is
    blocked (a lock, a busy database) keeps the loop waiting until the thread returns. Outside
    a child it does nothing.
    """

    def __init__(self, after_s: float, make_value: Callable[[], Any]) -> None:
        self._timer: threading.Timer | None = None
        if _RESULT_FD is not None:
            self._timer = threading.Timer(after_s, lambda: finish_early(make_value()))
            self._timer.daemon = True

    def __enter__(self) -> Watchdog:
        if self._timer is not None:
            self._timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._timer is not None:
            self._timer.cancel()


def quiet_fork() -> int:
    """``os.fork()`` with stdout and stderr flushed first and no warning about threads."""
    sys.stdout.flush()
    sys.stderr.flush()
    with warnings.catch_warnings():
        # Python 3.12+ warns when forking a process that has threads; the parent keeps none
        # of its own, and what a library may hold is not used by the child.
        warnings.simplefilter("ignore", DeprecationWarning)
        return os.fork()


def _find_prctl() -> Callable[..., int] | None:
    """libc's ``prctl``, looked up once, in the parent (a child that opened libc itself paid
    about 3 ms for it); None where there is none."""
    try:
        import ctypes

        return ctypes.CDLL(None, use_errno=True).prctl  # type: ignore[no-any-return]
    except (OSError, AttributeError):
        return None


_PRCTL = _find_prctl()
_PR_SET_PDEATHSIG = 1


def die_with_parent(parent: int) -> None:
    """Linux: SIGKILL this process when its parent dies (also of SIGKILL, when no ``finally``
    of the parent runs); elsewhere the parent's pipes reaching EOF end it."""
    if _PRCTL is not None:
        _PRCTL(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:  # the parent died before prctl took effect
        os._exit(0)


def _fork(job: Callable[[], Any]) -> tuple[int, int]:
    """Fork a child running ``job`` in a process group of its own (its pid): killing that
    group also kills what the job forked (the check workers of arib.checks._forked)."""
    read_fd, write_fd = os.pipe()
    parent = os.getpid()
    proctime.note_first_fork()
    pid = quiet_fork()
    if pid == 0:  # child
        os.close(read_fd)
        code = 0
        try:
            os.setpgid(0, 0)
            interrupts.reset_in_child()
            die_with_parent(parent)
            # Every temporary file of the child goes to its folder inside the run's private
            # folder, which the parent removes once the child is reaped (or killed).
            private = scratch.enter_child()
            # What a backend or mutant prints (warnings, thread noise after a loop closed)
            # goes to a file; the parent shows its tail only when the child crashed.
            err = os.open(private / "stderr",
                          os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
            os.dup2(err, 2)
            os.close(err)
            _child_main(job, write_fd)
        except BaseException:  # noqa: BLE001
            code = 70
        finally:
            os._exit(code)
    os.close(write_fd)
    with contextlib.suppress(OSError):  # also here: no race with the child's own setpgid
        os.setpgid(pid, pid)
    return pid, read_fd


def _stderr_path(pid: int) -> str:
    return str(scratch.folder() / f"child-{pid}" / "stderr")


def _stderr_tail(pid: int, limit: int = 1500) -> str:
    path = _stderr_path(pid)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        with os.fdopen(fd, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            handle.seek(max(0, handle.tell() - limit))
            return handle.read().decode(errors="replace").strip()
    except OSError:
        return ""


def _kill_group(pid: int) -> None:
    """SIGKILL the process group of the child ``pid`` (the child and what it forked)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def _reap(pid: int) -> int:
    """Wait for the child, then kill what it left in its process group; the wait status."""
    try:
        _, status = os.waitpid(pid, 0)
    except ChildProcessError:
        status = 0
    _kill_group(pid)
    return status


def _delivered(run: _Running, duration: float) -> ChildOutcome:
    """The outcome a child sent through its pipe (which it closed)."""
    try:
        ok, value = pickle.loads(b"".join(run.chunks))
    except Exception as exc:  # noqa: BLE001
        return ChildOutcome(ChildStatus.CRASH, detail=f"unreadable result: {exc!r}",
                            duration_s=duration)
    if ok:
        return ChildOutcome(ChildStatus.OK, value=value, duration_s=duration)
    return ChildOutcome(ChildStatus.RAISED, detail=str(value), duration_s=duration)


def _release(run: _Running) -> None:
    """Reap a child whose outcome is known; clean what it left."""
    _reap(run.pid)
    os.close(run.fd)
    scratch.remove_child(run.pid)


def _finish(run: _Running, timed_out: bool) -> ChildOutcome:
    duration = time.perf_counter() - run.started
    if timed_out:
        _kill_group(run.pid)
    status = _reap(run.pid)
    os.close(run.fd)
    stderr = _stderr_tail(run.pid)
    scratch.remove_child(run.pid)
    if timed_out:
        return ChildOutcome(ChildStatus.TIMEOUT, detail="killed after the hard timeout"
                            + (f"; stderr: {stderr}" if stderr else ""), duration_s=duration)
    if run.chunks:
        return _delivered(run, duration)
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        detail = f"child died from signal {signal.Signals(sig).name}"
    else:
        detail = f"child exited with status {os.WEXITSTATUS(status)} without a result"
    if stderr:
        detail += f"; stderr: {stderr}"
    return ChildOutcome(ChildStatus.CRASH, detail=detail, duration_s=duration)


class JobsRefused(BenchError):
    """``run_jobs`` was asked to run jobs inside ``refusing_jobs``: nothing was forked."""

    def __init__(self, count: int) -> None:
        super().__init__(f"{count} job(s) refused: run_jobs was called inside refusing_jobs(); "
                         f"the rule: work that must not fork is answered without children; "
                         f"fix: run it outside refusing_jobs()")


_REFUSING = False


@contextlib.contextmanager
def refusing_jobs() -> Iterator[None]:
    """Within: ``run_jobs`` forks nothing and raises JobsRefused when given any job (work
    tried on the chance that caches answer all of it: ``arib.runs.bench``)."""
    global _REFUSING
    previous, _REFUSING = _REFUSING, True
    try:
        yield
    finally:
        _REFUSING = previous


def run_jobs(
    jobs: Sequence[Callable[[], Any]],
    *,
    workers: int,
    timeout_s: float | Sequence[float],
    on_done: Callable[[int, ChildOutcome], None] | None = None,
    on_start: Callable[[int], None] | None = None,
    stalled_per_worker: int = STALLED_PER_WORKER,
    stall_after_share: float = STALL_AFTER_SHARE,
    then: Callable[[int, ChildOutcome], Sequence[tuple[Callable[[], Any], float]]] | None = None,
    before_fork: Callable[[int], None] | None = None,
    while_waiting: Callable[[], None] | None = None,
) -> list[ChildOutcome]:
    """Run each job in its own forked child, ``workers`` at a time, in submission order.

    ``timeout_s`` is one hard timeout for every job, or one per job. A child that is stalled
    (see ``STALL_AFTER_S``) stops counting against ``workers``, so a mutant blocked on a lock
    until its time limit does not keep a core idle; at most ``stalled_per_worker`` such
    children per worker run beside the active ones (0: never more than ``workers`` at once).
    A child is judged stalled only once it ran ``stall_after_share`` of its time limit (0:
    from STALL_AFTER_S on, for jobs that are short against their limit). ``then``, called
    after ``on_done`` with a job's index and outcome, returns the jobs that follow from it,
    each with its time limit: they are queued behind the pending ones (their indexes go on
    from the last job's), so that no job waits for a whole batch to end. ``before_fork`` is
    called in the parent just before a job's child is forked (to import, once, what that child
    needs: ``arib.warm``); ``while_waiting``, once, when every job queued so far has been
    forked and some still run (work for what comes next, done while the children compute).
    """
    if _REFUSING and jobs:
        raise JobsRefused(len(jobs))
    queue = list(jobs)
    limits = ([float(timeout_s)] * len(queue) if isinstance(timeout_s, (int, float))
              else [float(t) for t in timeout_s])
    outcomes: list[ChildOutcome | None] = [None] * len(queue)
    pending = list(range(len(queue)))

    def ended(index: int, outcome: ChildOutcome) -> None:
        outcomes[index] = outcome
        if on_done:
            on_done(index, outcome)
        for job, limit in (then(index, outcome) if then else ()):
            queue.append(job)
            limits.append(float(limit))
            outcomes.append(None)
            pending.append(len(queue) - 1)

    scratch.prepare()  # made here, in the parent, which removes them; children work inside
    running: dict[int, _Running] = {}
    # Children that delivered their result (their pipe closed, their outcome recorded) but
    # are not reaped yet: the next jobs are forked first, so a core never waits for an
    # ending child's exit.
    delivered: list[_Running] = []
    try:
        workers = max(1, workers)
        while pending or running or delivered:
            interrupts.raise_if_stopped()  # a stop whose exception an at-fork hook dropped
            while pending and (sum(1 for r in running.values() if not r.stalled) < workers
                               and len(running) < workers * (1 + stalled_per_worker)):
                index = pending.pop(0)
                if before_fork is not None:
                    before_fork(index)
                pid, fd = _fork(queue[index])
                running[fd] = _Running(index, pid, fd, time.perf_counter(), [])
                if on_start:
                    on_start(index)
            while delivered:
                _release(delivered.pop(0))
            if not running:
                continue
            if while_waiting is not None and not pending:
                idle, while_waiting = while_waiting, None
                idle()
                continue  # jobs may have ended meanwhile: read them before waiting
            now = time.perf_counter()
            wait = min(r.started + limits[r.index] - now for r in running.values())
            if pending:  # look again soon for children that stalled
                for run in running.values():
                    _sample_stall(run, now, limits[run.index], stall_after_share)
                wait = min(wait, STALL_WINDOW_S / 2)
            ready, _, _ = select.select(list(running), [], [], max(0.0, min(wait, 1.0)))
            for fd in ready:
                chunk = os.read(fd, 1 << 16)
                if chunk:
                    running[fd].chunks.append(chunk)
                    continue
                run = running.pop(fd)
                if run.chunks:
                    delivered.append(run)  # reaped even if what ``ended`` calls raises
                    ended(run.index, _delivered(run, time.perf_counter() - run.started))
                else:  # died without a result: its wait status says how
                    ended(run.index, _finish(run, timed_out=False))
            now = time.perf_counter()
            for fd, run in list(running.items()):
                if now - run.started > limits[run.index]:
                    running.pop(fd)
                    ended(run.index, _finish(run, timed_out=True))
    finally:
        # Interrupted: leave no child (nor grandchild) behind.
        for run in [*running.values(), *delivered]:
            _kill_group(run.pid)
            _reap(run.pid)
            os.close(run.fd)
            scratch.remove_child(run.pid)
    return [o for o in outcomes if o is not None]


def run_one(job: Callable[[], Any], timeout_s: float) -> ChildOutcome:
    """Run one job in a forked child."""
    return run_jobs([job], workers=1, timeout_s=timeout_s)[0]
