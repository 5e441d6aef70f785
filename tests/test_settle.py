"""arib.checks.openai_agents._settle: the wait until a call's leftover work in this process is
done."""

from __future__ import annotations

import asyncio
import sys
import threading
import time

import pytest

from arib.checks.openai_agents._settle import Settle, at_rest, busy_threads


def runner_threads() -> frozenset[int]:
    """The threads alive before a test starts, this one aside (the test runner's own, e.g.
    pytest-xdist's channel, started outside ``threading``): none of them is a backend's."""
    return frozenset(sys._current_frames()) - {threading.get_ident()}  # noqa: SLF001


def test_at_rest_at_once_when_nothing_is_left() -> None:
    foreign = runner_threads()  # taken before the test starts a thread of its own
    async def main() -> Settle:
        return await at_rest(asyncio.all_tasks(), cap_s=1.0, foreign=foreign)

    rest = asyncio.run(main())
    assert rest.at_rest and rest.waited_s < 0.5
    assert rest.describe().startswith("at rest after")


def test_waits_for_a_task_the_call_left_behind() -> None:
    foreign = runner_threads()  # taken before the test starts a thread of its own
    landed: list[float] = []

    async def main() -> Settle:
        before = asyncio.all_tasks()

        async def later() -> None:
            await asyncio.sleep(0.05)
            landed.append(time.monotonic())

        asyncio.get_running_loop().create_task(later())
        return await at_rest(before, cap_s=2.0, foreign=foreign)

    rest = asyncio.run(main())
    assert rest.at_rest and landed, "the wait ended before the task left behind ran"
    assert rest.waited_s >= 0.04


def test_waits_for_work_a_cancelled_caller_left_in_a_worker_thread() -> None:
    foreign = runner_threads()  # taken before the test starts a thread of its own
    done = threading.Event()

    def work() -> None:
        time.sleep(0.05)  # a statement still running after its caller gave up
        done.set()

    async def main() -> Settle:
        before = asyncio.all_tasks()
        call = asyncio.ensure_future(asyncio.to_thread(work))
        await asyncio.sleep(0.005)
        call.cancel()
        return await at_rest(before, cap_s=2.0, foreign=foreign)

    rest = asyncio.run(main())
    assert rest.at_rest and done.is_set()


def test_a_thread_that_never_rests_ends_the_wait_at_its_cap() -> None:
    stop = threading.Event()

    def spin() -> None:
        while not stop.is_set():
            sum(range(1000))

    thread = threading.Thread(target=spin, daemon=True)
    thread.start()
    try:
        assert busy_threads(), "a spinning thread is not at rest"
        rest = asyncio.run(at_rest(set(), cap_s=0.05))
    finally:
        stop.set()
        thread.join()
    assert not rest.at_rest and rest.waited_s == pytest.approx(0.05, abs=0.5)
    assert "thread" in rest.describe()
