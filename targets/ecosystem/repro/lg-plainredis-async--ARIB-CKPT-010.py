"""ARIB-CKPT-010 on lg-plainredis-async, outside the harness: AsyncRedisSaver
(langgraph-checkpoint-plainredis 0.1.0) inherits langgraph-checkpoint 4.3.2's
aget_delta_channel_history, which replays each checkpoint's writes in aget_tuple's order, and
AsyncRedisSaver's aget_tuple gives them by (task_id, idx) (the ARIB-CKPT-005 finding); a fork's
plain integer version overwrites the main line's blob (the ARIB-LGFORK-001 finding), so the seed
is the fork's value. InMemorySaver gives the documented history (see _delta_history.py). Run in
the lg-plainredis environment of `nox -s ecosystem` (a throwaway redis-server through arib's
ServiceManager); exit 1: reproduced."""

from __future__ import annotations

from typing import Any

from _async_savers import on_async_redis
from _delta_history import async_call, compare
from _repro import run


async def scenario(saver: Any) -> bool:
    """True when AsyncRedisSaver's history breaks the documented one."""
    return await compare(saver, async_call(saver), async_call)


if __name__ == "__main__":
    run(lambda: on_async_redis(scenario))
