"""ARIB-LGCANCEL-001 on lg-duckdb-async, outside the harness: an ``aput`` of AsyncDuckDBSaver
(langgraph-checkpoint-duckdb 2.0.2) cancelled while its statement runs raises
ResourceInUseException instead of being cancelled; the caller then reads the checkpoint absent,
and it is in the store afterwards.

The saver runs each statement in a worker thread (``asyncio.to_thread``) on a cursor it opened
under its own ``asyncio.Lock``. A cancellation reaches the awaiting task, not the thread: the
task leaves the ``with conn.cursor()`` block, whose close DuckDB (2.0.1 here) refuses while the
thread is still running on that cursor ("ResourceInUseException: ... connection is busy with
another call"), and that exception replaces the cancellation. The lock is released with the
statement still running, so the caller's next read, under the same lock, runs beside it and does
not see the checkpoint; the thread then commits it. The caller was told the put failed and saw
it absent, yet it is kept. Each round cancels the put after a different number of event-loop
turns (as the check cancels at each of its suspensions), on a fresh file; the later read is a
new connection once the event loop's threads have finished. Run in the lg-duckdb environment of
`nox -s ecosystem`; exit 1: reproduced."""

from __future__ import annotations

import asyncio
import os
import tempfile
from typing import Any

import duckdb
from _repro import run
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.duckdb.aio import AsyncDuckDBSaver

TURNS = range(0, 30)


def fresh_store() -> str:
    """A DuckDB file set up by the saver (its README: call .setup() the first time)."""
    path = os.path.join(tempfile.mkdtemp(), "checkpoints.duckdb")

    async def setup() -> None:
        async with AsyncDuckDBSaver.from_conn_string(path) as saver:
            await saver.setup()

    asyncio.run(setup())
    return path


def one_round(turns: int) -> dict[str, str]:
    """Cancel an aput after ``turns`` event-loop turns: how the call ended, what the caller
    read right after, what a new connection reads once every thread finished."""
    path = fresh_store()
    conn = duckdb.connect(path)
    checkpoint = empty_checkpoint()
    config: Any = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
    seen: dict[str, str] = {}

    async def go() -> None:
        saver = AsyncDuckDBSaver(conn)
        task = asyncio.create_task(saver.aput(config, checkpoint, {"step": 0}, {}))  # type: ignore[arg-type]
        for _ in range(turns):
            await asyncio.sleep(0)
        task.cancel()
        try:
            await task
            seen["call"] = "returned"
        except asyncio.CancelledError:
            seen["call"] = "cancelled"
        except Exception as exc:  # noqa: BLE001 - the observation
            seen["call"] = f"raised {type(exc).__name__}: {exc}"
        got = await saver.aget_tuple({"configurable": {**config["configurable"],
                                                       "checkpoint_id": checkpoint["id"]}})
        seen["caller"] = "present" if got else "absent"

    asyncio.run(go())  # returns once the loop's worker threads have finished
    conn.close()
    with duckdb.connect(path) as later:
        row = later.execute("SELECT count(*) FROM checkpoints WHERE checkpoint_id = ?",
                            [checkpoint["id"]]).fetchone()
    seen["later"] = "present" if row and row[0] else "absent"
    return seen


def main() -> bool:
    """True when a cancelled put that the caller read as absent is in the store after."""
    diverged = 0
    ends: dict[str, int] = {}
    for turns in TURNS:
        seen = one_round(turns)
        end = seen["call"].split(":")[0]
        ends[end] = ends.get(end, 0) + 1
        if seen["call"] != "returned" and seen["caller"] == "absent" \
                and seen["later"] == "present":
            diverged += 1
            print(f"cancel after {turns} turns: the call {seen['call']}; the caller reads it "
                  f"absent; later present")
    print(f"how the {len(TURNS)} cancelled calls ended: {ends}")
    print(f"{diverged} of {len(TURNS)} rounds: a put that did not return, read absent by its "
          f"caller, kept in the store")
    return diverged > 0


if __name__ == "__main__":
    run(main)
