"""Direct reproduction, outside the harness (ARIB-CKPT-004 on lg-lmdb): put_writes repeated for
the same (task_id, idx), as a retried task does, replaces the first write in LMDBSaver
(langgraph-checkpoint-lmdb 0.3.1); LangGraph's own InMemorySaver keeps the first for a regular
channel. Run in the lg-lmdb environment of `nox -s ecosystem`."""

from __future__ import annotations

import tempfile

import lmdb
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.memory import InMemorySaver
from langgraph_checkpoint_lmdb import LMDBSaver


def main() -> None:
    for saver in (LMDBSaver(lmdb.open(tempfile.mkdtemp(), max_dbs=10)), InMemorySaver()):
        start = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
        saved = saver.put(start, empty_checkpoint(), {"step": 0}, {})
        saver.put_writes(saved, [("ch0", "first")], "task-a")
        saver.put_writes(saved, [("ch0", "retry")], "task-a")  # the task, retried
        print(type(saver).__name__, saver.get_tuple(saved).pending_writes)


if __name__ == "__main__":
    main()
