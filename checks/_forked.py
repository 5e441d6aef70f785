"""Worker processes forked from inside a trial (shared by ARIB-MULTI-001 and ARIB-DUR-001).

A worker is a forked child that runs an async body on a fresh anyio loop in a new thread (the
fork copies the parent's running-loop state into the main thread, where no new loop may
start), talks to the parent in JSON lines over a pipe, and ends with ``os._exit`` so that no
inherited finalizer, atexit hook or buffered output of the parent runs twice. The parent
reads with a deadline and always reaps: ``reap()`` kills (SIGKILL) and waits for every child
that is still there, synchronously, so a cancelled or timed-out trial leaves no orphan. If
the trial's process itself is killed (the harness's hard timeout), each worker dies with it
(``PR_SET_PDEATHSIG`` on Linux) or sees EOF on its pipe from the parent and ends.

Forking copies the mutant installed in the admission child, so a worker runs the same
(possibly mutated) backend code as the parent; a spawned process would not.

Fork before the parent opens anything on the store: SQLite keeps per-file lock state (and the
WAL index's dead-man lock) per process, and a child that inherits it for a file the parent has
open can corrupt that database. The checks fork first and tell the workers when to open.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import anyio

from arib.ground import interrupts
from arib.ground.child import die_with_parent, quiet_fork

Body = Callable[["Channel"], Awaitable[None]]


class Channel:
    """The child's end: JSON lines to the parent, one-byte signals from it."""

    def __init__(self, out_fd: int, in_fd: int) -> None:
        self._out = out_fd
        self._in = in_fd
        self._pending = b""

    def send(self, message: dict[str, Any]) -> None:
        """Send one JSON line to the parent (blocking, whole line)."""
        view = memoryview((json.dumps(message) + "\n").encode())
        while view:
            view = view[os.write(self._out, view):]

    async def receive(self, timeout_s: float) -> str | None:
        """The parent's next line; None on EOF (the parent is gone) or timeout."""
        with anyio.move_on_after(timeout_s):
            while b"\n" not in self._pending:
                await anyio.wait_readable(self._in)
                chunk = os.read(self._in, 256)
                if not chunk:
                    return None
                self._pending += chunk
            line, _, self._pending = self._pending.partition(b"\n")
            return line.decode()
        return None

    async def wait_go(self, timeout_s: float) -> bool:
        """Wait for the parent's go line, then until the start instant it names.

        The instant is on the monotonic clock, which every process shares, so all processes
        release their writers at one moment instead of one wake-up latency apart.
        """
        line = await self.receive(timeout_s)
        if line is None or not line.startswith("go "):
            return False
        await sleep_until(float(line[3:]))
        return True


@dataclass
class Worker:
    """The parent's handle of one forked worker."""

    name: str
    pid: int
    read_fd: int
    go_fd: int
    buffer: bytes = b""
    eof: bool = False
    status: int | None = None
    messages: list[dict[str, Any]] = field(default_factory=list)

    @property
    def reaped(self) -> bool:
        """Whether the child's exit status has been collected."""
        return self.status is not None

    def describe_exit(self) -> str:
        """How the child ended, e.g. 'killed by SIGKILL' or 'exit status 0'."""
        if self.status is None:
            return "still running"
        if os.WIFSIGNALED(self.status):
            return f"killed by {signal.Signals(os.WTERMSIG(self.status)).name}"
        return f"exit status {os.WEXITSTATUS(self.status)}"


def _child(body: Body, channel: Channel, keep: set[int], drop: list[int], parent: int) -> None:
    code = 0
    try:
        die_with_parent(parent)
        interrupts.reset_in_child()  # in the lane child's process group: killed with it
        with contextlib.suppress(ValueError, OSError):
            signal.set_wakeup_fd(-1)  # the parent loop's self-pipe is not ours
        for fd in drop:
            if fd not in keep:
                with contextlib.suppress(OSError):
                    os.close(fd)
        failure: list[BaseException] = []

        def run() -> None:
            try:
                anyio.run(body, channel, backend="asyncio")
            except BaseException as exc:  # noqa: BLE001 - reported to the parent
                failure.append(exc)

        thread = threading.Thread(target=run, name="arib-worker", daemon=True)
        thread.start()
        thread.join()
        if failure:
            with contextlib.suppress(Exception):
                channel.send({"crash": f"{type(failure[0]).__name__}: {failure[0]}"[:300]})
            code = 3
    except BaseException:  # noqa: BLE001 - the child ends right here either way
        code = 70
    finally:
        os._exit(code)


def fork_worker(name: str, body: Body, inherited: list[int] | None = None) -> Worker:
    """Fork a child that runs ``body(channel)`` on its own loop; the parent gets a Worker.

    ``inherited`` names parent-side descriptors of earlier workers, closed in the child.
    """
    up_r, up_w = os.pipe()
    go_r, go_w = os.pipe()
    parent = os.getpid()
    pid = quiet_fork()
    if pid == 0:  # child
        os.close(up_r)
        os.close(go_w)
        _child(body, Channel(up_w, go_r), {up_w, go_r}, list(inherited or ()), parent)
    os.close(up_w)
    os.close(go_r)
    os.set_blocking(up_r, False)
    return Worker(name, pid, up_r, go_w)


async def sleep_until(instant: float) -> None:
    """Sleep until ``instant`` on the monotonic clock (shared by every process)."""
    delay = instant - time.monotonic()
    if delay > 0:
        await anyio.sleep(delay)


def tell(workers: list[Worker], line: str) -> None:
    """Send one line to every worker (read with ``Channel.receive``)."""
    for worker in workers:
        with contextlib.suppress(OSError):
            os.write(worker.go_fd, f"{line}\n".encode())


def send_go(workers: list[Worker], start: float) -> None:
    """Release every worker waiting in ``Channel.wait_go`` at the monotonic instant ``start``."""
    tell(workers, f"go {start!r}")


def _drain(worker: Worker) -> None:
    """Read what is buffered now, without blocking; parse complete lines."""
    while not worker.eof:
        try:
            chunk = os.read(worker.read_fd, 1 << 16)
        except BlockingIOError:
            break
        except OSError:
            chunk = b""
        if not chunk:
            worker.eof = True
            break
        worker.buffer += chunk
    *lines, worker.buffer = worker.buffer.split(b"\n")
    for line in lines:
        if line.strip():
            try:
                worker.messages.append(json.loads(line))
            except ValueError:
                worker.messages.append({"garbled": line[:200].decode(errors="replace")})


async def next_message(worker: Worker, deadline: float) -> dict[str, Any] | None:
    """The worker's next message; None on EOF or when ``deadline`` (monotonic) passes."""
    while True:
        if worker.messages:
            return worker.messages.pop(0)
        if worker.eof:
            return None
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return None
        with anyio.move_on_after(remaining):
            await anyio.wait_readable(worker.read_fd)
        _drain(worker)


def drain_after_exit(worker: Worker) -> list[dict[str, Any]]:
    """Every message still in the pipe of a reaped worker (its write end is closed now)."""
    _drain(worker)
    out, worker.messages = worker.messages, []
    return out


def kill(worker: Worker) -> None:
    """SIGKILL the worker (if still there) and wait for it."""
    if worker.reaped:
        return
    with contextlib.suppress(ProcessLookupError):
        os.kill(worker.pid, signal.SIGKILL)
    _wait(worker)


def _wait(worker: Worker) -> None:
    try:
        _, worker.status = os.waitpid(worker.pid, 0)
    except ChildProcessError:
        worker.status = 0


async def join(worker: Worker, deadline: float) -> bool:
    """Wait (polling, without blocking the loop) until the worker exits; False at deadline."""
    while not worker.reaped:
        pid, status = os.waitpid(worker.pid, os.WNOHANG)
        if pid:
            worker.status = status
            return True
        if time.monotonic() >= deadline:
            return False
        await anyio.sleep(0.002)
    return True


def reap(workers: list[Worker]) -> None:
    """Kill and wait for every worker still running, and close the parent's descriptors.

    Synchronous on purpose: it runs in ``finally`` even when the trial is being cancelled.
    """
    for worker in workers:
        kill(worker)
        _drain(worker)
        for fd in (worker.read_fd, worker.go_fd):
            with contextlib.suppress(OSError):
                os.close(fd)
