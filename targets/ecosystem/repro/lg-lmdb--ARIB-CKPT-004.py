"""ARIB-CKPT-004 on lg-lmdb, outside the harness: put_writes repeated for the same (task_id, idx),
as a retried task does, replaces the first write in LMDBSaver (langgraph-checkpoint-lmdb 0.3.1);
LangGraph's own InMemorySaver keeps the first for a regular channel (it skips a (task_id, idx)
it already holds unless idx is a special channel's negative index). Run in the lg-lmdb
environment of `nox -s ecosystem`; exit 1: reproduced."""

from __future__ import annotations

import tempfile
from typing import Any

import lmdb
from _repro import run
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.memory import InMemorySaver
from langgraph_checkpoint_lmdb import LMDBSaver


def kept(saver: Any) -> list[Any]:
    """The value of task-a's write of ch0 after a first put_writes and its retry."""
    start = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
    saved = saver.put(start, empty_checkpoint(), {"step": 0}, {})
    saver.put_writes(saved, [("ch0", "first")], "task-a")
    saver.put_writes(saved, [("ch0", "retry")], "task-a")  # the task, retried
    return [value for task, channel, value in saver.get_tuple(saved).pending_writes
            if (task, channel) == ("task-a", "ch0")]


def main() -> bool:
    """True when LMDBSaver keeps the retry's value."""
    print("put_writes(task-a, [('ch0', 'first')]); put_writes(task-a, [('ch0', 'retry')])")
    ref = kept(InMemorySaver())
    got = kept(LMDBSaver(lmdb.open(tempfile.mkdtemp(), max_dbs=10)))
    print(f"InMemorySaver keeps {ref}; LMDBSaver keeps {got}")
    return got != ref


if __name__ == "__main__":
    run(main)
