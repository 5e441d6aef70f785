"""arib.ground.schedule.waits: what a suspended actor waits for, read from its await chain."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
from collections.abc import Callable, Coroutine
from typing import Any

import anyio
import pytest

from arib.ground.schedule.waits import Wait, classify, take_timer, timer_delay


def suspended(make: Callable[[], Coroutine[Any, Any, Any]],
              actor_task: Callable[[Any], bool] = lambda _: False) -> tuple[Wait, Any]:
    """Start ``make()`` inside a loop, stop it at its first suspension, classify it."""
    async def main() -> tuple[Wait, Any]:
        coro = make()
        yielded = coro.send(None)
        try:
            return classify(coro, yielded, actor_task), coro
        finally:
            coro.close()

    return asyncio.run(main())


async def on_lock() -> None:
    lock = asyncio.Lock()
    await lock.acquire()
    async with lock:  # held: waits
        pass


async def on_anyio_event() -> None:
    await anyio.Event().wait()


async def on_thread() -> None:
    await asyncio.to_thread(lambda: None)


async def on_unknown_future() -> None:
    await asyncio.get_running_loop().create_future()


async def on_signal() -> None:
    await asyncio.wrap_future(concurrent.futures.Future())


@contextlib.asynccontextmanager
async def locked_context() -> Any:
    lock = asyncio.Lock()
    await lock.acquire()
    async with lock:
        yield


async def through_an_async_context_manager() -> None:
    async with locked_context():
        pass


@pytest.mark.parametrize(("make", "wait"), [
    (on_lock, Wait.INTERNAL),
    (on_anyio_event, Wait.INTERNAL),
    (on_thread, Wait.EXTERNAL),
    (on_unknown_future, Wait.EXTERNAL),
    (on_signal, Wait.INTERNAL),
    (through_an_async_context_manager, Wait.INTERNAL),
    (lambda: asyncio.sleep(5), Wait.TIMER),
])
def test_waits_are_classified_by_where_they_stopped(make: Any, wait: Wait) -> None:
    assert suspended(make)[0] is wait


def test_a_wait_on_an_actors_task_is_internal() -> None:
    async def main() -> list[Wait]:
        other = asyncio.ensure_future(asyncio.sleep(5))
        waits = []
        for awaiting in (lambda: other, lambda: asyncio.shield(other)):
            async def waiter(awaiting: Callable[[], Any] = awaiting) -> None:
                await awaiting()

            coro = waiter()
            yielded = coro.send(None)
            waits.append(classify(coro, yielded, lambda t: t is other))
            coro.close()
        other.cancel()
        return waits

    assert asyncio.run(main()) == [Wait.INTERNAL, Wait.INTERNAL]


def test_a_sleeps_delay_is_read_and_its_timer_can_be_taken() -> None:
    async def main() -> tuple[float | None, bool]:
        coro = asyncio.sleep(7.5)
        coro.send(None)
        delay, taken = timer_delay(coro), take_timer(coro)
        coro.close()
        return delay, taken

    assert asyncio.run(main()) == (7.5, True)
