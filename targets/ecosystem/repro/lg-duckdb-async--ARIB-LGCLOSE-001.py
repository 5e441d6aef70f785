"""ARIB-LGCLOSE-001 on lg-duckdb-async, outside the harness: the async context manager of
``AsyncDuckDBSaver.from_conn_string`` (langgraph-checkpoint-duckdb 2.0.2) exits while three
tasks put checkpoints through the saver, and the exit raises instead of returning.

AsyncDuckDBSaver serializes its calls with its own ``asyncio.Lock`` and runs each statement in a
worker thread (``asyncio.to_thread``) on a cursor of its one connection. The context manager's
exit closes that connection without taking the lock, so when a task's statement is running in
its thread at that moment, DuckDB (2.0.1 here) refuses the close ("ResourceInUseException: ...
connection is busy with another call") and the exception escapes the ``async with`` block. It
depends on where the exit lands (a statement in a thread, or not), so the script tries several
exit points, as the check does with seeded yields. Run in the lg-duckdb environment of
`nox -s ecosystem`; exit 1: reproduced."""

from __future__ import annotations

import asyncio
import os
import tempfile

from _repro import run
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.duckdb.aio import AsyncDuckDBSaver

WRITERS = 3
YIELDS = range(0, 16)  # the exit after this many event-loop turns


async def one_round(path: str, yields: int) -> str | None:
    """Tasks put while the context exits after ``yields`` turns; what the exit raised."""
    cm = AsyncDuckDBSaver.from_conn_string(path)
    saver = await cm.__aenter__()

    async def writer(w: int) -> None:
        config = {"configurable": {"thread_id": f"t{w}", "checkpoint_ns": ""}}
        for step in range(50):
            try:
                await saver.aput(config, empty_checkpoint(), {"step": step}, {})  # type: ignore[arg-type]
            except Exception:  # noqa: BLE001 - after the exit, refusal is expected
                return

    tasks = [asyncio.create_task(writer(w)) for w in range(WRITERS)]
    for _ in range(yields):
        await asyncio.sleep(0)
    try:
        await cm.__aexit__(None, None, None)
        raised = None
    except Exception as exc:  # noqa: BLE001 - the observation
        raised = f"{type(exc).__name__}: {exc}"
    await asyncio.gather(*tasks)
    print(f"exit after {yields} turns with {WRITERS} writers in flight: "
          f"{'raised ' + raised if raised else 'returned'}")
    return raised


async def rounds() -> bool:
    path = os.path.join(tempfile.mkdtemp(), "checkpoints.duckdb")
    async with AsyncDuckDBSaver.from_conn_string(path) as saver:
        await saver.setup()  # its README: call .setup() the first time
    raised = [await one_round(path, yields) for yields in YIELDS]
    print(f"the exit raised in {sum(r is not None for r in raised)} of {len(raised)} rounds")
    return any(raised)


def main() -> bool:
    """True when the exit raised at some exit point."""
    return asyncio.run(rounds())


if __name__ == "__main__":
    run(main)
