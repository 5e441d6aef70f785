"""Threads under the scheduler: hand-offs, thread actors, interposition points, wrapped locks.

- ``ScheduledExecutor`` is the loop's default executor during a scheduled run: work a task
  actor hands to a thread (``asyncio.to_thread``, ``run_in_executor``) runs as that actor, in
  the lowest-numbered idle worker (so which thread, and which thread-local connection, serves
  it follows the schedule), and its result reaches the loop when the thread is done. Calls
  from anything else run as in a plain ThreadPoolExecutor.
- ``point()`` is an interposition point: a thread running as an actor stops there and waits
  for its turn. sqlite3 connections opened during a scheduled trial (``interpose_sqlite``) stop
  at every execute, commit and rollback; a ``SchedLock`` (``adopt`` wraps the threading locks
  an object holds) stops before acquiring and blocks in the scheduler, not in the OS, while
  another actor holds it; so thread work interleaves statement by statement, as the schedule
  says, instead of running as one atomic step.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import functools
import queue
import sqlite3
import threading
import types
from collections.abc import Callable, Iterator
from typing import Any

from arib.ground.schedule.actors import Actor, Part
from arib.ground.schedule.driver import current_actor
from arib.ground.schedule.scheduler import Scheduler

_tls = threading.local()
_ACTIVE: list[Scheduler] = []  # the scheduler of the trial running in this process, if any
_EXECUTOR: list[ScheduledExecutor] = []  # this process's, made anew once a loop shut it down


def active() -> Scheduler | None:
    """The scheduler of the scheduled trial running now, or None."""
    return _ACTIVE[-1] if _ACTIVE else None


def current_part() -> Part | None:
    """The actor part this thread runs, or None."""
    return getattr(_tls, "part", None)


def point() -> None:
    """An interposition point: a thread running as an actor waits here for its turn. Not
    while it holds a wrapped lock: no other actor can reach what that lock guards, so a
    switch there would add decisions and no interleaving of the guarded state (a mutant
    that drops the lock has its points back)."""
    part = current_part()
    if part is not None and not part.held:
        part.sched.park(part)


class _Worker(threading.Thread):
    def __init__(self, pool: _Workers, index: int) -> None:
        super().__init__(name=f"arib-sched-{index}", daemon=True)
        self.pool, self.index = pool, index
        self.jobs: queue.SimpleQueue[Callable[[], None] | None] = queue.SimpleQueue()

    def run(self) -> None:
        while (job := self.jobs.get()) is not None:
            job()


class _Workers:
    """Threads that run actor parts; a job goes to the lowest-numbered idle one."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._all: list[_Worker] = []
        self._idle: set[int] = set()

    def take(self) -> _Worker:
        with self._lock:
            if self._idle:
                index = min(self._idle)
                self._idle.discard(index)
                return self._all[index]
            worker = _Worker(self, len(self._all))
            self._all.append(worker)
        worker.start()
        return worker

    def give_back(self, worker: _Worker) -> None:
        with self._lock:
            self._idle.add(worker.index)

    def stop(self) -> None:
        with self._lock:
            workers, self._all, self._idle = self._all, [], set()
        for worker in workers:
            worker.jobs.put(None)


def run_part(sched: Scheduler, workers: _Workers, actor: Actor, job: Callable[[], Any],
             first_point: bool = False) -> concurrent.futures.Future[Any]:
    """Run ``job`` in a worker thread as ``actor``'s thread side; ``first_point``: wait for a
    turn before starting (a thread actor)."""
    part = sched.part_started(actor)
    future: concurrent.futures.Future[Any] = concurrent.futures.Future()
    worker = workers.take()

    def body() -> None:
        if not future.set_running_or_notify_cancel():
            workers.give_back(worker)
            sched.part_ended(part)
            return
        _tls.part = part
        result: Any = None
        error: BaseException | None = None
        try:
            if first_point:
                point()
            result = job()
        except BaseException as exc:  # noqa: BLE001 - delivered through the future
            error = exc
        finally:
            _tls.part = None
        workers.give_back(worker)  # before the part ends: the next hand-off finds it idle
        sched.part_ended(part)
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)

    worker.jobs.put(body)
    return future


class ScheduledExecutor(concurrent.futures.ThreadPoolExecutor):
    """The loop's default executor in a scheduled run (see the module docstring)."""

    def __init__(self) -> None:
        super().__init__(thread_name_prefix="arib-pool")
        self.workers = _Workers()

    def submit(self, fn: Callable[..., Any], /, *args: Any,
               **kwargs: Any) -> concurrent.futures.Future[Any]:
        sched = active()
        actor = current_actor() if sched is not None and sched.active else None
        if sched is None or actor is None or actor.free:
            return super().submit(fn, *args, **kwargs)
        if actor.part is not None:  # a second hand-off at once: it runs unscheduled
            sched.uncontrolled()
            return super().submit(fn, *args, **kwargs)
        return run_part(sched, self.workers, actor, functools.partial(fn, *args, **kwargs))

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        self.workers.stop()
        super().shutdown(wait, cancel_futures=cancel_futures)


_LOCK_TYPES = (type(threading.Lock()), type(threading.RLock()))


class SchedLock:
    """A threading lock seen by the scheduler: acquiring is an interposition point, and an
    actor that finds it held waits in the scheduler (not ready) until it is released, so the
    holder can be scheduled. Threads that run as no actor use the real lock as it is."""

    def __init__(self, sched: Scheduler, real: Any) -> None:
        self._sched = sched
        self._real = real

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        """As ``threading.Lock.acquire``."""
        part = current_part()
        if part is None or part.actor.free or not self._sched.active:
            return bool(self._real.acquire(blocking, timeout))
        point()
        while True:
            if self._real.acquire(False):
                part.held += 1
                return True
            if not blocking:
                return False
            forced = self._sched.park(part, blocked_on=self)
            if forced or part.actor.free or not self._sched.active:
                taken = bool(self._real.acquire(True, timeout))
                part.held += taken
                return taken

    def release(self) -> None:
        """As ``threading.Lock.release``."""
        self._real.release()
        part = current_part()
        if part is not None and part.held:
            part.held -= 1
        self._sched.lock_released(self)

    def locked(self) -> bool:
        """As ``threading.Lock.locked``."""
        return bool(self._real.locked())

    def __enter__(self) -> bool:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()

    def __getattr__(self, name: str) -> Any:  # _is_owned, _release_save, ... of an RLock
        if name in ("_sched", "_real"):
            raise AttributeError(name)
        return getattr(self._real, name)


def adopt(sched: Scheduler, obj: Any, depth: int = 2) -> int:
    """Wrap the threading locks ``obj`` holds in its attributes (and its attributes'
    attributes, to ``depth``) as SchedLocks; how many were wrapped."""
    return _adopt(sched, obj, depth, set())


def _attributes(obj: Any) -> list[tuple[str, Any]]:
    """An object's attributes: its ``__dict__`` and the ``__slots__`` of its classes."""
    found = dict(getattr(obj, "__dict__", {}))
    for cls in type(obj).__mro__:
        slots = cls.__dict__.get("__slots__", ())
        for name in (slots,) if isinstance(slots, str) else slots:
            if name not in found and not name.startswith("__"):
                with contextlib.suppress(AttributeError):
                    found[name] = getattr(obj, name)
    return list(found.items())


def _adopt(sched: Scheduler, obj: Any, depth: int, seen: set[int]) -> int:
    if id(obj) in seen or isinstance(obj, (type, types.ModuleType, types.FunctionType,
                                           types.MethodType, str, bytes, int, float)):
        return 0
    seen.add(id(obj))
    wrapped = 0
    for name, value in _attributes(obj):
        if isinstance(value, _LOCK_TYPES):
            with contextlib.suppress(AttributeError, TypeError):
                setattr(obj, name, SchedLock(sched, value))
                wrapped += 1
        elif depth > 1 and not isinstance(value, SchedLock):
            wrapped += _adopt(sched, value, depth - 1, seen)
    return wrapped


class _StatementPoints:
    """Statements as interposition points (mixed into a sqlite3 cursor and connection)."""

    def execute(self, *args: Any, **kwargs: Any) -> Any:  # noqa: D102
        point()
        return super().execute(*args, **kwargs)  # type: ignore[misc]

    def executemany(self, *args: Any, **kwargs: Any) -> Any:  # noqa: D102
        point()
        return super().executemany(*args, **kwargs)  # type: ignore[misc]

    def executescript(self, *args: Any, **kwargs: Any) -> Any:  # noqa: D102
        point()
        return super().executescript(*args, **kwargs)  # type: ignore[misc]


class PointCursor(_StatementPoints, sqlite3.Cursor):
    """A cursor whose statements are interposition points."""


class PointConnection(_StatementPoints, sqlite3.Connection):
    """A connection whose statements, commits and rollbacks are interposition points."""

    def cursor(self, factory: Any = None) -> Any:  # type: ignore[override]  # noqa: D102
        return super().cursor(factory or PointCursor)

    def commit(self) -> None:  # noqa: D102
        point()
        super().commit()

    def rollback(self) -> None:  # noqa: D102
        point()
        super().rollback()


_REAL_CONNECT = sqlite3.connect


def _connect(*args: Any, **kwargs: Any) -> Any:
    if len(args) < 6 and "factory" not in kwargs:
        kwargs["factory"] = PointConnection
    return _REAL_CONNECT(*args, **kwargs)


@contextlib.contextmanager
def interpose_sqlite() -> Iterator[None]:
    """While inside: ``sqlite3.connect`` opens PointConnections (where no factory is given)."""
    sqlite3.connect = _connect  # type: ignore[assignment]
    try:
        yield
    finally:
        sqlite3.connect = _REAL_CONNECT


def executor() -> ScheduledExecutor:
    """This process's scheduled executor (a new one once a closed loop shut the last down)."""
    if not _EXECUTOR or _EXECUTOR[0]._shutdown:  # noqa: SLF001 - ThreadPoolExecutor's flag
        _EXECUTOR[:] = [ScheduledExecutor()]
    return _EXECUTOR[0]


def start_thread_actor(sched: Scheduler, label: str,
                       call: Callable[[], Any]) -> concurrent.futures.Future[Any]:
    """Start ``call`` as a thread actor of ``sched``: it waits for its first turn, then runs
    from interposition point to interposition point as the schedule grants."""
    actor = sched.new_actor(label, thread=True)
    return run_part(sched, executor().workers, actor, call, first_point=True)
