"""arib.ground.schedule (scheduler, driver, plan): actors run one step at a time in the
seed's order, the same seed gives the same run on asyncio and uvloop, a replay repeats it,
cancellation passes through the driver, and what waits on other actors is not waited for."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import pytest

from arib.ground.schedule import (
    Schedule,
    Scheduler,
    activated,
    as_actor,
    make,
)
from arib.ground.schedule.strategies import Replay, Strategy

LOOPS = ["asyncio", "uvloop"]


def run(body: Callable[[Scheduler], Awaitable[Any]], strategy: Strategy, loop: str = "asyncio",
        **options: Any) -> tuple[Any, Schedule]:
    """Run ``body(sched)`` under a scheduler on a fresh loop; its result and schedule."""
    async def main() -> tuple[Any, Schedule]:
        sched = Scheduler(strategy, **options)
        with activated(sched):
            result = await body(sched)
        return result, sched.record()

    backend_options = {"use_uvloop": True} if loop == "uvloop" else {}
    return anyio.run(main, backend="asyncio", backend_options=backend_options)


async def lost_update(sched: Scheduler, writers: int = 3) -> tuple[int, list[str]]:
    """Writers that read a counter, yield, then write it back: a lost update is a race."""
    state = {"n": 0}
    log: list[str] = []

    async def writer(w: int) -> None:
        for _ in range(2):
            seen = state["n"]
            log.append(f"w{w} read {seen}")
            await asyncio.sleep(0)
            state["n"] = seen + 1
            log.append(f"w{w} wrote {seen + 1}")

    async with anyio.create_task_group() as tg:
        for w in range(writers):
            tg.start_soon(as_actor(sched, writer, f"writer {w}"), w)
    return state["n"], log


@pytest.mark.parametrize("loop", LOOPS)
def test_the_same_seed_gives_the_same_run_and_a_replay_repeats_it(loop: str) -> None:
    first, schedule = run(lost_update, make("random", 4), loop)
    again, same = run(lost_update, make("random", 4), loop)
    replayed, record = run(lost_update, Replay(Schedule.parse(schedule.text())), loop)
    assert first == again == replayed
    assert schedule.text() == same.text() == record.text()
    assert schedule.controlled == len(schedule.decisions) > 0
    assert record.diverged == 0 and schedule.actors == ("writer 0", "writer 1", "writer 2")


def test_asyncio_and_uvloop_decide_alike() -> None:
    results = {loop: run(lost_update, make("pct", 8, {"d": 2, "k": 12}), loop)
               for loop in LOOPS}
    assert results["asyncio"][0] == results["uvloop"][0]
    assert results["asyncio"][1].text() == results["uvloop"][1].text()


def test_seeds_find_the_lost_update_and_serial_orders_keep_it() -> None:
    totals = {run(lost_update, make("random", seed))[0][0] for seed in range(12)}
    assert len(totals) > 1 and max(totals) < 6  # a random walk interleaves: updates lost
    # PCT with depth 1 never preempts: every writer runs through, nothing is lost
    assert {run(lost_update, make("pct", seed, {"d": 1}))[0][0] for seed in range(5)} == {6}


def test_a_wait_on_another_actor_is_decided_at_once_and_controlled() -> None:
    async def body(sched: Scheduler) -> list[str]:
        lock = asyncio.Lock()
        log: list[str] = []

        async def holder() -> None:
            async with lock:
                for i in range(3):
                    log.append(f"h{i}")
                    await asyncio.sleep(0)

        async def waiter() -> None:
            await asyncio.sleep(0)
            async with lock:
                log.append("w")

        async with anyio.create_task_group() as tg:
            tg.start_soon(as_actor(sched, holder, "holder"))
            tg.start_soon(as_actor(sched, waiter, "waiter"))
        return log

    started = time.perf_counter()
    log, schedule = run(body, make("random", 1), settle_s=5.0)
    assert time.perf_counter() - started < 2.0  # a lock wait is never waited out
    assert log == ["h0", "h1", "h2", "w"] and schedule.uncontrolled == 0


def test_thread_hand_offs_are_scheduled_and_their_results_awaited() -> None:
    async def body(sched: Scheduler) -> list[str]:
        log: list[str] = []

        async def actor(name: str) -> None:
            for i in range(2):
                await asyncio.to_thread(log.append, f"{name}{i}")

        async with anyio.create_task_group() as tg:
            for name in "ab":
                tg.start_soon(as_actor(sched, actor, name), name)
        return log

    logs = {tuple(run(body, make("random", seed))[0]) for seed in range(10)}
    assert len(logs) > 1  # the order of the threads' work follows the seed
    log, schedule = run(body, make("random", 3))
    assert run(body, make("random", 3))[0] == log and schedule.uncontrolled == 0


def test_tasks_an_actor_creates_are_child_actors() -> None:
    async def body(sched: Scheduler) -> int:
        async def child() -> int:
            await asyncio.sleep(0)
            return 1

        async def parent() -> None:
            assert await asyncio.ensure_future(child()) == 1

        async with anyio.create_task_group() as tg:
            tg.start_soon(as_actor(sched, parent, "parent"))
        return len(sched.actors)

    count, schedule = run(body, make("random", 2))
    assert count == 2 and schedule.actors == ("parent", "parent/task")
    assert schedule.uncontrolled == 0


def test_virtual_sleeps_take_no_real_time() -> None:
    async def body(sched: Scheduler) -> list[str]:
        log: list[str] = []

        async def sleeper(name: str, seconds: float) -> None:
            await asyncio.sleep(seconds)
            log.append(name)

        async with anyio.create_task_group() as tg:
            tg.start_soon(as_actor(sched, sleeper, "long"), "long", 30.0)
            tg.start_soon(as_actor(sched, sleeper, "short"), "short", 10.0)
        return log

    started = time.perf_counter()
    log, schedule = run(body, make("random", 1), virtual_timers=True)
    assert time.perf_counter() - started < 5.0
    assert log == ["short", "long"] and schedule.uncontrolled == 0


@pytest.mark.parametrize("loop", LOOPS)
def test_cancellation_reaches_the_actor_through_the_driver(loop: str) -> None:
    async def body(sched: Scheduler) -> list[str]:
        log: list[str] = []

        async def victim() -> None:
            log.append("victim started")
            try:
                while True:
                    await asyncio.sleep(0)
            except asyncio.CancelledError:
                log.append("victim cancelled")
                raise

        async def failing() -> None:
            while not log:
                await asyncio.sleep(0)
            raise RuntimeError("boom")

        with pytest.raises(BaseException) as caught:  # noqa: PT011 - a group of them
            async with anyio.create_task_group() as tg:
                tg.start_soon(as_actor(sched, victim, "victim"))
                tg.start_soon(as_actor(sched, failing, "failing"))
        assert "boom" in repr(caught.value.exceptions)  # type: ignore[attr-defined]
        return log

    log, _ = run(body, make("random", 5), loop)
    assert log == ["victim started", "victim cancelled"]


def test_a_timeout_cancels_actors_waiting_for_their_turn() -> None:
    async def body(sched: Scheduler) -> bool:
        async def spinner() -> None:
            while True:
                await asyncio.sleep(0)

        with anyio.move_on_after(0.3) as scope:
            async with anyio.create_task_group() as tg:
                for i in range(2):
                    tg.start_soon(as_actor(sched, spinner, f"spinner {i}"))
        return scope.cancelled_caught

    assert run(body, make("random", 1))[0] is True


@pytest.mark.parametrize("loop", LOOPS)
def test_fifo_is_the_loops_own_order(loop: str) -> None:
    async def plain() -> tuple[int, list[str]]:
        state = {"n": 0}
        log: list[str] = []

        async def writer(w: int) -> None:
            for _ in range(2):
                seen = state["n"]
                log.append(f"w{w} read {seen}")
                await asyncio.sleep(0)
                state["n"] = seen + 1
                log.append(f"w{w} wrote {seen + 1}")

        async with anyio.create_task_group() as tg:
            for w in range(3):
                tg.start_soon(writer, w)
        return state["n"], log

    options = {"use_uvloop": True} if loop == "uvloop" else {}
    unscheduled = anyio.run(plain, backend="asyncio", backend_options=options)
    scheduled, schedule = run(lost_update, make("fifo", 1), loop)
    assert scheduled == unscheduled and schedule.uncontrolled == 0


def test_an_idle_asyncio_loop_settles_in_one_round_and_decides_as_with_every_round(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from arib.ground.schedule import scheduler

    async def probe() -> tuple[bool, bool]:
        loop = asyncio.get_running_loop()
        loop.call_soon(lambda: None)
        busy = scheduler._idle(loop)  # a callback is ready
        await asyncio.sleep(0)  # it ran
        return busy, scheduler._idle(loop)

    assert asyncio.run(probe()) == (False, True)
    assert not scheduler._idle(None)
    uv = pytest.importorskip("uvloop")
    assert not uv.run(probe())[1]  # no ready queue to read: never idle, settles by rounds
    def pct() -> Strategy:
        return make("pct", 8, {"d": 2, "k": 12})

    fast = run(lost_update, pct())
    monkeypatch.setattr(scheduler, "_idle", lambda loop: False)
    every_round = run(lost_update, pct())
    assert fast[0] == every_round[0] and fast[1].text() == every_round[1].text()
