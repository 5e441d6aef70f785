"""ARIB-CKPT-002 on lg-lmdb, outside the harness: LMDBSaver.list (langgraph-checkpoint-lmdb
0.3.1) takes a ``filter`` argument and never reads it: list(config, filter={"source": "loop"})
returns every checkpoint of the thread, where BaseCheckpointSaver.list documents "filter:
Additional filtering criteria for metadata" and InMemorySaver returns only the checkpoints whose
metadata matches. With limit=1 the filtered listing's one checkpoint is then the wrong one. Run
in the lg-lmdb environment of `nox -s ecosystem`; exit 1: reproduced."""

from __future__ import annotations

import tempfile
from typing import Any

import lmdb
from _repro import run
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.memory import InMemorySaver
from langgraph_checkpoint_lmdb import LMDBSaver

THREAD = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}


def listed(saver: Any) -> dict[str, list[int]]:
    """Four checkpoints, steps 0..3, source input then loop; the steps each listing returns."""
    parent = THREAD
    for step in range(4):
        checkpoint = empty_checkpoint()
        checkpoint["id"] = f"1ef00000-0000-6000-8000-00000000000{step}"
        source = "input" if step == 0 else "loop"
        parent = saver.put(parent, checkpoint, {"source": source, "step": step}, {})
    asks: dict[str, dict[str, Any]] = {
        "filter source=input": {"filter": {"source": "input"}},
        "filter step=1, limit=1": {"filter": {"step": 1}, "limit": 1}}
    return {name: [t.metadata["step"] for t in saver.list(THREAD, **kw)]
            for name, kw in asks.items()}


def main() -> bool:
    """True when LMDBSaver's filtered listings differ from InMemorySaver's."""
    ref = listed(InMemorySaver())
    got = listed(LMDBSaver(lmdb.open(tempfile.mkdtemp(), max_dbs=10)))
    for name in ref:
        print(f"list({name}): InMemorySaver steps {ref[name]}, LMDBSaver steps {got[name]}")
    return got != ref


if __name__ == "__main__":
    run(main)
