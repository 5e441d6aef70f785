"""arib.ground.schedule.threads: thread actors interleave at sqlite3 calls and wrapped
locks as the schedule says, so a race without the lock is explored, not serialized away, and
with the lock it is controlled and never lost."""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import threading
import types

import anyio
import pytest

from arib.ground.schedule import (
    SchedLock,
    Scheduler,
    activated,
    adopt,
    make,
    start_thread_actor,
)
from arib.ground.schedule.threads import PointConnection, ScheduledExecutor, point


def counter_race(seed: int, locked: bool, loop: str = "asyncio") -> tuple[int, int, int]:
    """Two thread actors increment a counter in one shared sqlite3 connection (read, then
    write and commit), with or without the lock their object holds: (final, decisions,
    uncontrolled)."""
    async def main() -> tuple[int, int, int]:
        sched = Scheduler(make("random", seed))
        with activated(sched):
            conn = sqlite3.connect(":memory:", check_same_thread=False)
            assert isinstance(conn, PointConnection)
            conn.execute("CREATE TABLE c (n INTEGER)")
            conn.execute("INSERT INTO c VALUES (0)")
            conn.commit()
            saver = types.SimpleNamespace(lock=threading.Lock(), conn=conn)
            assert adopt(sched, saver) == 1 and isinstance(saver.lock, SchedLock)

            def bump() -> None:
                for _ in range(2):
                    with saver.lock if locked else contextlib.nullcontext():
                        (n,) = saver.conn.execute("SELECT n FROM c").fetchone()
                        saver.conn.execute("UPDATE c SET n = ?", (n + 1,))
                        saver.conn.commit()

            futures = [start_thread_actor(sched, f"bump {i}", bump) for i in range(2)]
            for future in futures:
                await asyncio.wrap_future(future)
            (final,) = conn.execute("SELECT n FROM c").fetchone()
        record = sched.record()
        return final, len(record.decisions), record.uncontrolled

    options = {"use_uvloop": True} if loop == "uvloop" else {}
    return anyio.run(main, backend="asyncio", backend_options=options)


def test_without_the_lock_the_race_is_explored_and_replays() -> None:
    finals = [counter_race(seed, locked=False) for seed in range(10)]
    assert {f for f, _, _ in finals} != {4}  # some schedules lose an increment
    assert all(u == 0 for _, _, u in finals)  # every decision controlled
    assert counter_race(3, locked=False) == finals[3]


@pytest.mark.parametrize("loop", ["asyncio", "uvloop"])
def test_with_the_lock_nothing_is_lost_and_nothing_hangs(loop: str) -> None:
    for seed in range(6):
        final, decisions, uncontrolled = counter_race(seed, locked=True, loop=loop)
        assert final == 4 and uncontrolled == 0 and decisions > 2


def test_outside_an_actor_points_do_nothing_and_the_executor_is_plain() -> None:
    point()  # no actor: returns at once
    executor = ScheduledExecutor()
    try:
        assert executor.submit(sum, [1, 2]).result(timeout=5) == 3
    finally:
        executor.shutdown()


def test_a_wrapped_lock_outside_a_schedule_is_the_lock() -> None:
    lock = SchedLock(Scheduler(make("random", 1)), threading.Lock())
    with lock:
        assert lock.locked()
        assert lock.acquire(blocking=False) is False
    assert not lock.locked()
