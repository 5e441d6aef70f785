"""ARIB-LGCANCEL-001 on lg-lmdb-async, outside the harness: an ``aput`` of AsyncLMDBSaver
(langgraph-checkpoint-lmdb 0.3.1) cancelled after it started reports the cancellation, its
caller then reads the checkpoint absent, and the checkpoint is in the store afterwards.

The saver hands each call to a thread pool of its own (``run_in_executor``). A cancellation
reaches the awaiting task, not the worker thread: the task raises CancelledError at once while
the put goes on in its thread. The caller's next read, handed to the same pool, can run before
the put's write lands and see nothing; the put then commits. The caller was told the put was
cancelled and read it absent, yet it is kept: a retry writes it twice, and a caller that trusts
what it read is wrong. Each round, on a fresh LMDB environment, cancels the put after a number
of event-loop turns (as the check cancels at each suspension), reads through the same saver,
then, once its pool has finished, through a new AsyncLMDBSaver; a control put, not cancelled,
reads back present both ways. The race depends on thread timing, so the script runs many
rounds. Run in the lg-lmdb environment of `nox -s ecosystem`;
exit 1: reproduced."""

from __future__ import annotations

import asyncio
from typing import Any

from _async_savers import on_async_lmdb
from _repro import run
from langgraph.checkpoint.base import empty_checkpoint

ROUNDS = 60
TURNS = (1, 2, 3)


def one_round(turns: int | None) -> dict[str, str]:
    """Cancel an aput after ``turns`` event-loop turns: how the call ended, what its caller read
    right after, what a new saver on the same environment reads once the pool finished."""
    seen: dict[str, str] = {}
    checkpoint = empty_checkpoint()
    config: Any = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
    by_id: Any = {"configurable": {**config["configurable"], "checkpoint_id": checkpoint["id"]}}

    async def scenario(saver: Any) -> bool:
        task = asyncio.create_task(saver.aput(config, checkpoint, {"step": 0}, {}))
        if turns is not None:  # None: the control, a put left to return
            for _ in range(turns):
                await asyncio.sleep(0)
            task.cancel()
        try:
            await task
            seen["call"] = "returned"
        except asyncio.CancelledError:
            seen["call"] = "cancelled"
        seen["caller"] = "present" if await saver.aget_tuple(by_id) else "absent"
        saver.executor.shutdown(wait=True)  # the put's thread has finished now
        later = type(saver)(saver._saver.env)  # a new saver on the same environment
        try:
            seen["later"] = "present" if await later.aget_tuple(by_id) else "absent"
        finally:
            later.executor.shutdown(wait=True)
        return True

    on_async_lmdb(scenario)
    return seen


def main() -> bool:
    """True when a cancelled put that its caller read as absent is in the store after."""
    control = one_round(None)
    print(f"control, a put not cancelled: {control}")
    if control != {"call": "returned", "caller": "present", "later": "present"}:
        raise RuntimeError(f"the control put did not read back: {control}; the script's reads "
                           f"are wrong, so its rounds would confirm nothing")
    diverged = 0
    ends: dict[str, int] = {}
    for n in range(ROUNDS):
        turns = TURNS[n % len(TURNS)]
        seen = one_round(turns)
        key = f"{seen['call']}, caller {seen['caller']}, later {seen['later']}"
        ends[key] = ends.get(key, 0) + 1
        if seen["call"] == "cancelled" and seen["caller"] == "absent" \
                and seen["later"] == "present":
            diverged += 1
            if diverged <= 3:
                print(f"round {n}: cancelled after {turns} turn(s); the caller reads it absent; "
                      f"a new saver reads it present")
    print(f"the {ROUNDS} rounds ended: {ends}")
    print(f"{diverged} of {ROUNDS} rounds: a put reported cancelled, read absent by its caller, "
          f"kept in the store")
    return diverged > 0


if __name__ == "__main__":
    run(main)
