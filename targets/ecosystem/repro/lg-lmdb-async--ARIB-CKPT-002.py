"""ARIB-CKPT-002 on lg-lmdb-async, outside the harness: AsyncLMDBSaver.alist
(langgraph-checkpoint-lmdb 0.3.1) takes a ``filter`` argument and hands it to LMDBSaver.list,
which never reads it: alist(config, filter={"source": "input"}) yields every checkpoint of the
thread, where BaseCheckpointSaver.alist documents "filter: Additional filtering criteria for
metadata" and InMemorySaver's alist yields only the checkpoints whose metadata matches. With
limit=1 the filtered listing's one checkpoint is then the wrong one. Run in the lg-lmdb
environment of `nox -s ecosystem`; exit 1: reproduced."""

from __future__ import annotations

from typing import Any

from _async_savers import on_async_lmdb
from _repro import run
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.memory import InMemorySaver

THREAD = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}


async def listed(saver: Any) -> dict[str, list[int]]:
    """Four checkpoints (aput), steps 0..3, source input then loop; the steps each alist
    yields."""
    parent = THREAD
    for step in range(4):
        checkpoint = empty_checkpoint()
        checkpoint["id"] = f"1ef00000-0000-6000-8000-00000000000{step}"
        source = "input" if step == 0 else "loop"
        parent = await saver.aput(parent, checkpoint, {"source": source, "step": step}, {})
    asks: dict[str, dict[str, Any]] = {
        "filter source=input": {"filter": {"source": "input"}},
        "filter step=1, limit=1": {"filter": {"step": 1}, "limit": 1}}
    steps: dict[str, list[int]] = {}
    for name, kw in asks.items():
        steps[name] = [t.metadata["step"] async for t in saver.alist(THREAD, **kw)]
    return steps


async def scenario(saver: Any) -> bool:
    """True when AsyncLMDBSaver's filtered listings differ from InMemorySaver's."""
    ref = await listed(InMemorySaver())
    got = await listed(saver)
    for name in ref:
        print(f"alist({name}): InMemorySaver steps {ref[name]}, AsyncLMDBSaver steps "
              f"{got[name]}")
    return got != ref


if __name__ == "__main__":
    run(lambda: on_async_lmdb(scenario))
