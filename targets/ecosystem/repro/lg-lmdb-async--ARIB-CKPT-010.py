"""ARIB-CKPT-010 on lg-lmdb-async, outside the harness: AsyncLMDBSaver
(langgraph-checkpoint-lmdb 0.3.1) inherits langgraph-checkpoint 4.3.2's
aget_delta_channel_history, which replays each checkpoint's writes in aget_tuple's order;
AsyncLMDBSaver's aget_tuple gives them by (task_id, idx) (the ARIB-CKPT-005 finding), so the
history of a DeltaChannel comes out of the writes_sort_key order the release documents and
InMemorySaver keeps (see _delta_history.py). Run in the lg-lmdb environment of `nox -s
ecosystem`; exit 1: reproduced."""

from __future__ import annotations

from typing import Any

from _async_savers import on_async_lmdb
from _delta_history import async_call, compare
from _repro import run


async def scenario(saver: Any) -> bool:
    """True when AsyncLMDBSaver's history breaks the documented one."""
    return await compare(saver, async_call(saver), async_call)


if __name__ == "__main__":
    run(lambda: on_async_lmdb(scenario))
