"""ARIB-CKPT-005 on lg-plainredis-async, outside the harness: AsyncRedisSaver
(langgraph-checkpoint-plainredis 0.1.0), through aput, aput_writes and aget_tuple, returns a
checkpoint's pending writes by (task_id, idx), not in the writes_sort_key order (task_path,
task_id, idx) that langgraph-checkpoint 4.3.2 documents for get_tuple and that InMemorySaver's
aget_tuple keeps (see _writes_order.py). Run in the lg-plainredis environment of `nox -s
ecosystem` (a throwaway redis-server through arib's ServiceManager); exit 1: reproduced."""

from __future__ import annotations

from typing import Any

from _async_savers import on_async_redis
from _repro import run
from _writes_order import acompare


async def scenario(saver: Any) -> bool:
    """True when AsyncRedisSaver breaks the documented order."""
    return await acompare("AsyncRedisSaver", saver)


if __name__ == "__main__":
    run(lambda: on_async_redis(scenario))
