"""ARIB-LGFORK-001 on lg-plainredis-async, outside the harness: two lines forked from one
checkpoint of a thread (time travel: update_state as of an earlier checkpoint) each move channel
``value`` to the saver's next version through aput; the main line's checkpoint then reads
(aget_tuple) the fork's value.

langgraph-checkpoint-plainredis 0.1.0's AsyncRedisSaver keys a channel's blob by (thread, ns,
channel, version) and keeps BaseCheckpointSaver's get_next_version, a plain integer (previous +
1), so both lines write version 2 of ``value`` under one key and the later aput overwrites the
earlier line's value. LangGraph's own InMemorySaver, which keys blobs the same way, versions a
channel with a random part ("<int>.<random>") and keeps both lines. Run in the lg-plainredis
environment of `nox -s ecosystem` (a throwaway redis-server through arib's ServiceManager);
exit 1: reproduced.
"""

from __future__ import annotations

from typing import Any

from _async_savers import on_async_redis
from _repro import run
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.memory import InMemorySaver


async def put(saver: Any, parent: Any, cid: str, value: str, version: Any) -> Any:
    """aput a checkpoint whose channel ``value`` is ``value`` at ``version``."""
    checkpoint = empty_checkpoint()
    checkpoint["id"] = cid
    checkpoint["channel_values"] = {"value": value}
    checkpoint["channel_versions"] = {"value": version}
    return await saver.aput(parent, checkpoint, {"step": 0}, {"value": version})


async def fork(saver: Any) -> Any:
    """base, then main (child of base), then fork (child of base); main's values read back."""
    start = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
    v1 = saver.get_next_version(None, None)
    base = await put(saver, start, "1ef00000-0000-6000-8000-000000000000", "base", v1)
    v_main = saver.get_next_version(v1, None)
    main_line = await put(saver, base, "1ef00000-0000-6000-8000-000000000001", "main", v_main)
    v_fork = saver.get_next_version(v1, None)  # the fork starts again from base's version
    await put(saver, base, "1ef00000-0000-6000-8000-000000000002", "fork", v_fork)
    got = (await saver.aget_tuple(main_line)).checkpoint["channel_values"]
    print(f"{type(saver).__name__}: versions base {v1!r}, main {v_main!r}, fork {v_fork!r}; "
          f"the main line's checkpoint reads {got} (put {{'value': 'main'}})")
    return got


async def scenario(saver: Any) -> bool:
    """True when AsyncRedisSaver's main line reads another value than was put."""
    await fork(InMemorySaver())
    return await fork(saver) != {"value": "main"}


if __name__ == "__main__":
    run(lambda: on_async_redis(scenario))
