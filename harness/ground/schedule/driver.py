"""Task actors: a coroutine driven await by await under the trial's scheduler.

``drive`` runs the actor's coroutine like ``yield from`` (as ``arib.checks._suspend.at_suspension``
does): at each suspension it tells the scheduler what the actor waits for and passes the
awaited future on to the task; when the task resumes it (what it awaited is done), it does not
resume the coroutine at once but waits for the turn the scheduler grants. An exception thrown
into it (a cancellation) is passed on to the coroutine at once, and the actor runs free from
then on: a group being torn down is not held back by the schedule.
"""

from __future__ import annotations

import asyncio
import contextvars
import types
from collections.abc import Awaitable, Callable, Coroutine, Generator
from typing import Any

from arib.ground.schedule.actors import Actor
from arib.ground.schedule.scheduler import Scheduler
from arib.ground.schedule.waits import Wait, classify, take_timer, timer_delay

CURRENT_ACTOR: contextvars.ContextVar[Actor | None] = contextvars.ContextVar(
    "arib_current_actor", default=None)


@types.coroutine
def drive(sched: Scheduler, actor: Actor,
          coro: Coroutine[Any, Any, Any]) -> Generator[Any, Any, Any]:
    """Run ``coro`` as ``actor``: one step per turn the scheduler grants."""
    send: Any = None
    throw: BaseException | None = None
    try:
        yield from sched.turn(actor)
    except BaseException as exc:  # noqa: BLE001 - cancelled before its first turn
        sched.set_free(actor)
        throw = exc
    while True:
        try:
            yielded = coro.send(send) if throw is None else coro.throw(throw)
        except StopIteration as stop:
            return stop.value
        send, throw = None, None
        if actor.free:
            try:
                send = yield yielded
            except BaseException as exc:  # noqa: BLE001 - passed on to the coroutine
                throw = exc
            continue
        slept = None
        if yielded is not None:  # a future: wait for it as the task would
            wait = classify(coro, yielded, sched.is_actor_task)
            delay = timer_delay(coro) if wait is Wait.TIMER else None
            if delay is not None and sched.virtual_timers and take_timer(coro):
                sched.sleep_virtual(actor, delay)  # woken by the virtual clock, not the loop
                slept = yielded
            else:
                sched.suspended(actor, wait, delay)
                try:
                    send = yield yielded
                except BaseException as exc:  # noqa: BLE001 - a cancellation: run free now
                    sched.set_free(actor)
                    throw = exc
                    continue
        try:
            yield from sched.turn(actor)
        except BaseException as exc:  # noqa: BLE001 - cancelled while waiting for its turn
            sched.set_free(actor)
            throw = exc
        if slept is not None and not slept.done():
            slept.set_result(None)  # the virtual sleep is over


async def _main(sched: Scheduler, actor: Actor, coro: Coroutine[Any, Any, Any]) -> Any:
    CURRENT_ACTOR.set(actor)
    try:
        return await drive(sched, actor, coro)
    finally:
        sched.finished(actor)


def as_actor(sched: Scheduler, fn: Callable[..., Awaitable[Any]],
             label: str) -> Callable[..., Awaitable[Any]]:
    """``fn`` as a task actor's body: registered now (numbered in start order), driven by
    ``drive`` once its task runs."""
    actor = sched.new_actor(label)

    def main(*args: Any) -> Coroutine[Any, Any, Any]:
        return _main(sched, actor, fn(*args))  # type: ignore[arg-type]

    main.__name__ = main.__qualname__ = f"actor {actor.id}: {label}"
    return main


def is_actor_body(coro: Any) -> bool:
    """Whether ``coro`` is a task actor's body (as ``as_actor`` makes them)."""
    return getattr(coro, "cr_code", None) is _main.__code__


def task_factory(sched: Scheduler, previous: Callable[..., Any] | None) -> Callable[..., Any]:
    """A loop task factory for a scheduled trial: a task an actor's step creates (a backend
    that runs part of a call as its own task) is a child actor, numbered when created; every
    actor's task is known to the scheduler (a wait on it is a wait on the actors)."""

    def factory(loop: asyncio.AbstractEventLoop, coro: Any, **kwargs: Any) -> Any:
        parent = CURRENT_ACTOR.get()
        if (sched.active and parent is not None and not parent.free
                and asyncio.iscoroutine(coro) and not is_actor_body(coro)):
            child = sched.new_actor(f"{parent.label}/task")
            coro = _main(sched, child, coro)
        task = (previous(loop, coro, **kwargs) if previous is not None
                else asyncio.Task(coro, loop=loop, **kwargs))
        if is_actor_body(coro):
            sched.actor_tasks.add(task)
        return task

    return factory


def current_actor() -> Actor | None:
    """The task actor whose step runs now, or None outside every actor."""
    return CURRENT_ACTOR.get()
