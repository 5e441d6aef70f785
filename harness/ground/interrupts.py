"""SIGINT, SIGTERM and SIGHUP end a run the same way: as an ``Interrupted`` exception.

``stops_raise()`` (entered by ``python -m arib``) turns each of those signals, in the
process that entered it, into ``Interrupted``, a KeyboardInterrupt: every ``except
KeyboardInterrupt`` and ``finally`` on the way up runs for all three, so measured results are
written (marked incomplete), forked children are killed and servers are stopped. The exit
status is 128 + the signal's number (130, 143, 129), as a shell reports a death by that
signal. A forked child that inherited the handler dies of the signal instead, as by default.
A signal that arrives while the first one is being handled is ignored, so the cleanup it
started is not cut short. A signal ignored when the run starts (``nohup``) stays ignored.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import types
from collections.abc import Iterator
from typing import Any

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class Interrupted(KeyboardInterrupt):
    """The run was stopped by ``signum``."""

    def __init__(self, signum: int) -> None:
        super().__init__(f"interrupted by {signal.Signals(signum).name}")
        self.signum = signum


_received: list[int] = []
_owner: int | None = None  # the process inside stops_raise()


def received() -> int | None:
    """The first stop signal this process received inside ``stops_raise()``, if any."""
    return _received[0] if _received else None


def raise_if_stopped() -> None:
    """Raise ``Interrupted`` when a stop signal was received in this process.

    A signal whose handler runs inside an at-fork hook (``logging``'s lock release after a
    fork) has its exception printed as "Exception ignored" and dropped; a scheduling loop
    calls this between steps so that such a stop still ends the run.
    """
    if _received and _owner == os.getpid():
        raise Interrupted(_received[0])


def exit_status(signum: int) -> int:
    """The exit status of a run stopped by ``signum``: 128 + its number."""
    return 128 + int(signum)


def reset_in_child() -> None:
    """In a forked child: the stop signals act as by default again (the child just dies)."""
    for signum in STOP_SIGNALS:
        if signal.getsignal(signum) is not signal.SIG_IGN:
            signal.signal(signum, signal.SIG_DFL)


@contextlib.contextmanager
def stops_raise() -> Iterator[None]:
    """Within the block, SIGINT, SIGTERM and SIGHUP raise ``Interrupted`` in this process."""
    owner = os.getpid()
    previous: dict[signal.Signals, Any] = {}

    def handler(signum: int, frame: types.FrameType | None) -> None:
        if os.getpid() != owner:  # a forked child that did not reset its handlers
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)
            return
        if _received:
            return  # the first stop is being handled: let its cleanup finish
        _received.append(signum)
        raise Interrupted(signum)

    global _owner
    _received.clear()
    _owner = owner
    for stop in STOP_SIGNALS:
        if signal.getsignal(stop) is signal.SIG_IGN:
            continue
        previous[stop] = signal.signal(stop, handler)
    try:
        yield
    finally:
        _owner = None
        for stop, old in previous.items():
            signal.signal(stop, old)


def run_in_group(command: list[str], **kwargs: Any) -> subprocess.CompletedProcess[Any]:
    """``subprocess.run`` in a process group of its own, killed whole if the run is stopped.

    A tool we start (``mutmut run``) forks workers of its own; on an interrupt (or any
    exception while waiting) the whole group gets SIGKILL, so none of them outlives the run.
    """
    kwargs.pop("check", None)
    # A stop that lands while Popen starts the tool (the tool already running, its process
    # not yet returned to us) is held until the process is ours to kill, then delivered.
    with stops_held() as held:
        process = subprocess.Popen(command, start_new_session=True, **kwargs)
    with process:
        try:
            for signum in held:
                signal.raise_signal(signum)  # its handler raises here, inside the try
            stdout, stderr = process.communicate()
        except BaseException:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            raise
        return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)


@contextlib.contextmanager
def stops_held() -> Iterator[list[int]]:
    """Within the block, a stop signal is recorded (in the list yielded) instead of handled;
    the handlers come back after it. Only the main thread can change them: elsewhere nothing
    is held."""
    held: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield held
        return
    previous = {stop: signal.getsignal(stop) for stop in STOP_SIGNALS}
    for stop, old in previous.items():
        if old is not None and old is not signal.SIG_IGN:
            signal.signal(stop, lambda signum, frame: held.append(signum))
    try:
        yield held
    finally:
        for stop, old in previous.items():
            if old is not None:
                signal.signal(stop, old)


class Overdue(Exception):
    """A call made under ``alarm_after`` did not return in time."""


@contextlib.contextmanager
def alarm_after(seconds: float) -> Iterator[None]:
    """Raise ``Overdue`` in the block if it runs longer than ``seconds`` (on the main thread
    of a POSIX process; elsewhere no deadline). For a call that may block the event loop's own
    thread forever, e.g. a sync method that waits on the loop it is blocking."""
    main = threading.main_thread()
    if not hasattr(signal, "pthread_kill") or threading.current_thread() is not main:
        yield
        return

    def overdue(signum: int, frame: types.FrameType | None) -> None:
        raise Overdue(f"no answer in {seconds:g} s")

    # Sent to the main thread itself: a process-wide alarm may land on another thread and
    # leave the main thread's wait (a sleep, a lock) uninterrupted.
    timer = threading.Timer(seconds, signal.pthread_kill, (main.ident, signal.SIGALRM))
    timer.daemon = True
    previous = signal.signal(signal.SIGALRM, overdue)
    timer.start()
    try:
        yield
    finally:
        timer.cancel()
        timer.join()
        signal.signal(signal.SIGALRM, previous)
