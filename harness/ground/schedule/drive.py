"""Task actors: a coroutine driven await by await under the trial's scheduler.

``drive`` runs the actor's coroutine like ``yield from`` (as ``checks._suspend.at_suspension``
does): at each suspension it tells the scheduler what the actor waits for and passes the
awaited future on to the task; when the task resumes it (what it awaited is done), it does not
resume the coroutine at once but waits for the turn the scheduler grants. An exception thrown
into it (a cancellation) is passed on to the coroutine at once, and the actor runs free from
then on: a group being torn down is not held back by the schedule.
"""

from __future__ import annotations

import contextvars
import types
from collections.abc import Awaitable, Callable, Coroutine, Generator
from typing import Any

from harness.ground.schedule.scheduler import Actor, Scheduler
from harness.ground.schedule.waits import classify

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
        if yielded is not None:  # a future: wait for it as the task would
            sched.suspended(actor, classify(coro))
            try:
                send = yield yielded
            except BaseException as exc:  # noqa: BLE001 - a cancellation: run free from here
                sched.set_free(actor)
                throw = exc
                continue
        try:
            yield from sched.turn(actor)
        except BaseException as exc:  # noqa: BLE001 - cancelled while waiting for its turn
            sched.set_free(actor)
            throw = exc


def as_actor(sched: Scheduler, fn: Callable[..., Awaitable[Any]],
             label: str) -> Callable[..., Awaitable[Any]]:
    """``fn`` as a task actor's body: registered now (numbered in start order), driven by
    ``drive`` once its task runs."""
    actor = sched.new_actor(label)

    async def main(*args: Any) -> Any:
        CURRENT_ACTOR.set(actor)
        try:
            return await drive(sched, actor, fn(*args))  # type: ignore[arg-type]
        finally:
            sched.finished(actor)

    main.__name__ = main.__qualname__ = f"actor {actor.id}: {label}"
    return main


def current_actor() -> Actor | None:
    """The task actor whose step runs now, or None outside every actor."""
    return CURRENT_ACTOR.get()
