"""ARIB-CKPT-004 on lg-lmdb-async, outside the harness: aput_writes repeated for the same
(task_id, idx), as a retried task does, replaces the first write in AsyncLMDBSaver
(langgraph-checkpoint-lmdb 0.3.1, whose aput_writes runs LMDBSaver.put_writes in its thread
pool); LangGraph's own InMemorySaver keeps the first for a regular channel (it skips a
(task_id, idx) it already holds unless idx is a special channel's negative index). Run in the
lg-lmdb environment of `nox -s ecosystem`; exit 1: reproduced."""

from __future__ import annotations

from typing import Any

from _async_savers import on_async_lmdb
from _repro import run
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.memory import InMemorySaver


async def kept(saver: Any) -> list[Any]:
    """The value of task-a's write of ch0 (aget_tuple) after a first aput_writes and its
    retry."""
    start = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
    saved = await saver.aput(start, empty_checkpoint(), {"step": 0}, {})
    await saver.aput_writes(saved, [("ch0", "first")], "task-a")
    await saver.aput_writes(saved, [("ch0", "retry")], "task-a")  # the task, retried
    got = await saver.aget_tuple(saved)
    return [value for task, channel, value in got.pending_writes
            if (task, channel) == ("task-a", "ch0")]


async def scenario(saver: Any) -> bool:
    """True when AsyncLMDBSaver keeps another value than InMemorySaver."""
    print("aput_writes(task-a, [('ch0', 'first')]); aput_writes(task-a, [('ch0', 'retry')])")
    ref = await kept(InMemorySaver())
    got = await kept(saver)
    print(f"InMemorySaver keeps {ref}; AsyncLMDBSaver keeps {got}")
    return got != ref


if __name__ == "__main__":
    run(lambda: on_async_lmdb(scenario))
