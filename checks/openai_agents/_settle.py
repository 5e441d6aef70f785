"""Waiting until a call's leftover work in this process is done, instead of a fixed sleep.

A call that was cancelled (or whose caller gave up) can leave work behind that lands later:
a worker thread still running its statement, a task it shielded, a completion posted back to
the loop. Where the store has no server (a local file or memory store), all of that work is
in this process, so "nothing lands after the call ended" is decided exactly by waiting until
the process is at rest: every task started since the call began is done, nothing is ready
on the loop, and every other thread is blocked at a known idle spot (a worker waiting for
its next job, a thread waiting on a condition). After that, nothing of the call can run any
more. The wait is event-driven (short polls, no fixed sleep), and bounded: past ``cap_s`` it
gives up and says so, and the read that follows is then what a fixed sleep of ``cap_s``
would have shown.
"""

from __future__ import annotations

import asyncio
import linecache
import sys
import threading
import time
import types
from collections.abc import Collection, Iterable
from dataclasses import dataclass

# (a path suffix of the code's file, its function name) of frames where a thread waits for
# work or on a condition: innermost frame there, with a blocking call on its current line
# (``get(``, ``acquire(``), the thread is at rest.
_IDLE_SPOTS: tuple[tuple[str, str, str], ...] = (
    ("concurrent/futures/thread.py", "_worker", "get("),  # ThreadPoolExecutor (to_thread)
    ("aiosqlite/core.py", "_connection_worker_thread", "get("),  # aiosqlite's connection
    ("anyio/_backends/_asyncio.py", "run", "get("),  # anyio's worker threads
    ("harness/ground/schedule/threads.py", "run", "get("),  # the scheduler's workers
    ("queue.py", "get", "wait("),  # queue.Queue.get blocked on its condition
    ("threading.py", "wait", "acquire("),  # Condition/Event.wait (timers, watchdogs)
)
POLL_S = 0.001


@dataclass(frozen=True)
class Settle:
    """How a wait for rest ended: at rest (exact) or at its cap, after ``waited_s``."""

    at_rest: bool
    waited_s: float
    busy: str = ""  # what was still running at the cap, in words

    def describe(self) -> str:
        """E.g. 'at rest after 0.4 ms' or 'not at rest after 0.15 s (thread ...)'."""
        if self.at_rest:
            return f"at rest after {self.waited_s * 1000:.1f} ms"
        return f"not at rest after {self.waited_s:.2f} s ({self.busy})"


def thread_at_rest(frame: types.FrameType) -> bool:
    """Whether a thread whose innermost Python frame is ``frame`` waits at a known idle spot."""
    path = frame.f_code.co_filename.replace("\\", "/")
    for suffix, name, call in _IDLE_SPOTS:
        if path.endswith(suffix) and frame.f_code.co_name == name:
            return call in linecache.getline(frame.f_code.co_filename, frame.f_lineno)
    return False


def busy_threads(own: int | None = None, foreign: Collection[int] = ()) -> list[str]:
    """The other threads not at rest, each as 'file:function:line' (``foreign``: idents of
    threads that are none of the backend's, e.g. a test runner's own, left out)."""
    me = threading.get_ident() if own is None else own
    return [f"{f.f_code.co_filename.rsplit('/', 1)[-1]}:{f.f_code.co_name}:{f.f_lineno}"
            for ident, f in sys._current_frames().items()  # noqa: SLF001 - the only way
            if ident != me and ident not in foreign and not thread_at_rest(f)]


def pending_tasks(before: Iterable[asyncio.Task[object]]) -> list[asyncio.Task[object]]:
    """Tasks not yet done that were not running before (``before``), the current one aside."""
    known = set(before)
    me = asyncio.current_task()
    return [t for t in asyncio.all_tasks() if t is not me and t not in known and not t.done()]


async def at_rest(before: Iterable[asyncio.Task[object]], cap_s: float,
                  foreign: Collection[int] = ()) -> Settle:
    """Wait until every task started since ``before`` is done, the loop has nothing ready and
    every other thread is at rest, at most ``cap_s`` seconds. ``foreign`` threads are left out:
    a check's trial runs in a forked child whose only threads are its backend's and the
    harness's, but a test of this module runs beside its runner's (pytest-xdist's channel)."""
    known = set(before)
    loop = asyncio.get_running_loop()
    started = time.monotonic()
    while True:
        tasks = pending_tasks(known)
        threads = busy_threads(foreign=foreign)
        ready = len(getattr(loop, "_ready", ()))  # callbacks posted back (asyncio's loop)
        if not tasks and not threads and not ready:
            # Twice in a row, a loop turn apart: a completion posted between the two looks
            # is run, and whatever it starts is seen.
            await asyncio.sleep(0)
            if (not pending_tasks(known) and not busy_threads(foreign=foreign)
                    and not len(getattr(loop, "_ready", ()))):
                return Settle(True, time.monotonic() - started)
        waited = time.monotonic() - started
        if waited >= cap_s:
            busy = ([f"task {getattr(t.get_coro(), '__qualname__', t.get_name())}"
                     for t in tasks] + [f"thread {t}" for t in threads])
            return Settle(False, waited, ", ".join(busy[:3]) or f"{ready} ready callbacks")
        await asyncio.sleep(POLL_S)
