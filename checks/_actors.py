"""Starting a trial's racing actors, under its scheduler when the check is concurrent
(``CheckSpec.concurrent``; arib.ground.schedule): the task groups, thread races and
hand-offs the checks share. Outside a scheduled trial each helper does what a plain task
group, worker thread or ``anyio.to_thread`` does."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import threading
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Any, TypeVar

import anyio
import anyio.abc
import anyio.to_thread

from arib.ground.schedule import active, as_actor, current_actor, point, start_thread_actor
from arib.ground.schedule.scheduler import describe_actor

T = TypeVar("T")


class ActorGroup:
    """A task group whose tasks are the trial's actors (numbered in start order)."""

    def __init__(self, group: anyio.abc.TaskGroup) -> None:
        self._group = group
        self._sched = active()

    def start_soon(self, fn: Callable[..., Coroutine[Any, Any, Any]], *args: Any,
                   name: str | None = None) -> None:
        """Start ``fn(*args)`` as an actor (``name``: its label in the schedule)."""
        label = name or describe_actor(getattr(fn, "__name__", "actor"), args)
        if self._sched is None:
            self._group.start_soon(fn, *args, name=label)
        else:
            self._group.start_soon(as_actor(self._sched, fn, label), *args,  # type: ignore[arg-type]
                                   name=label)


@contextlib.asynccontextmanager
async def actors() -> AsyncIterator[ActorGroup]:
    """``async with actors() as group: group.start_soon(writer, w)``: a task group of actors
    that the trial's scheduler runs one step at a time, in its seeded order."""
    async with anyio.create_task_group() as group:
        yield ActorGroup(group)


def actor_task(fn: Callable[..., Coroutine[Any, Any, Any]], *args: Any,
               name: str) -> asyncio.Task[Any]:
    """``fn(*args)`` as a bare asyncio task (a caller that must be able to abandon it, never
    awaiting it once cancelled), an actor of the trial's scheduler where one is active."""
    sched = active()
    body = fn if sched is None else as_actor(sched, fn, name)
    return asyncio.ensure_future(body(*args))


async def thread_actors(calls: list[Callable[[], Any]], labels: list[str] | None = None,
                        abandon: bool = False) -> list[BaseException | None]:
    """Run sync calls as thread actors, each call's exception returned (None: it returned).
    Scheduled, each waits for its turn and then runs from interposition point to point
    (sqlite3 calls, wrapped locks, ``thread_point()``); else they run in worker threads
    released together by a threading barrier."""
    outcome: list[BaseException | None] = [None] * len(calls)

    def one(i: int) -> None:
        try:
            calls[i]()
        except Exception as exc:  # noqa: BLE001 - the backend's exception is evidence
            outcome[i] = exc

    sched = active()
    if sched is not None:
        names = labels or [describe_actor(getattr(c, "__name__", "thread"), ()) for c in calls]
        futures = [asyncio.wrap_future(start_thread_actor(sched, names[i],
                                                          functools.partial(one, i)))
                   for i in range(len(calls))]
        for future in futures:
            await future
        return outcome
    barrier = threading.Barrier(len(calls), timeout=10)

    def released(i: int) -> None:
        barrier.wait()
        one(i)

    async with anyio.create_task_group() as tg:
        for i in range(len(calls)):
            tg.start_soon(functools.partial(anyio.to_thread.run_sync, released, i,
                                            abandon_on_cancel=abandon))
    return outcome


async def to_thread(fn: Callable[..., T], *args: Any, abandon: bool = False) -> T:
    """``fn(*args)`` in a worker thread: as the calling actor's hand-off in a scheduled trial
    (its sqlite3 calls and wrapped locks are the schedule's points), else anyio's.
    ``abandon``: a cancelled caller stops waiting at once, the thread left to finish (a
    cancelled wait on an executor's future never waits for it)."""
    if active() is not None and current_actor() is not None:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(None, functools.partial(fn, *args))
    return await anyio.to_thread.run_sync(functools.partial(fn, *args),
                                          abandon_on_cancel=abandon)


def thread_point() -> None:
    """In a thread actor or hand-off of a scheduled trial: let the schedule switch actors
    here; elsewhere nothing."""
    point()
