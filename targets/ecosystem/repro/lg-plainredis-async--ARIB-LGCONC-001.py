"""ARIB-LGCONC-001 on lg-plainredis-async, outside the harness: two writers (asyncio tasks, one
AsyncRedisSaver) each aput a chain of three checkpoints of their own on one thread id at the same
time, as two runs of one thread do; a checkpoint of one reads back (aget_tuple) the other
writer's value.

The cause is the one of lg-plainredis-async--ARIB-LGFORK-001.py: langgraph-checkpoint-plainredis
0.1.0's AsyncRedisSaver, like its RedisSaver, keys a channel's blob by (thread, ns, channel,
version) with integer versions (1, 2, 3 on every chain started from nothing), so the two chains'
blobs share keys and the later aput wins. InMemorySaver, whose versions carry a random part,
keeps each chain's values. Run in the lg-plainredis environment of `nox -s ecosystem` (a
throwaway redis-server through arib's ServiceManager); exit 1: reproduced."""

from __future__ import annotations

import asyncio
from typing import Any

from _async_savers import on_async_redis
from _repro import run
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.memory import InMemorySaver

STEPS = 3


async def writer(saver: Any, w: int, start: asyncio.Event, saved: list[Any]) -> None:
    """Writer ``w``: STEPS checkpoints on thread 't', value 'w<w>-s<step>', yielding to the
    loop after each aput so that the two writers interleave."""
    parent: Any = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
    version = None
    await start.wait()
    for step in range(STEPS):
        version = saver.get_next_version(version, None)
        checkpoint = empty_checkpoint()
        checkpoint["id"] = f"1ef00000-000{w}-6000-8000-00000000000{step}"
        checkpoint["channel_values"] = {"value": f"w{w}-s{step}"}
        checkpoint["channel_versions"] = {"value": version}
        parent = await saver.aput(parent, checkpoint, {"step": step}, {"value": version})
        saved.append((parent, f"w{w}-s{step}"))
        await asyncio.sleep(0)


async def foreign(saver: Any) -> list[str]:
    """Run both writers together; every checkpoint that reads back another value."""
    start = asyncio.Event()
    saved: list[Any] = []
    tasks = [asyncio.create_task(writer(saver, w, start, saved)) for w in (0, 1)]
    await asyncio.sleep(0)  # both tasks wait on the event
    start.set()
    await asyncio.gather(*tasks)
    wrong = []
    for config, value in saved:
        got = (await saver.aget_tuple(config)).checkpoint["channel_values"].get("value")
        if got != value:
            wrong.append(f"{config['configurable']['checkpoint_id']} put {value!r} "
                         f"reads {got!r}")
    print(f"{type(saver).__name__}: {len(saved)} checkpoints put, {len(wrong)} read back "
          f"another writer's value: {wrong}")
    return wrong


async def scenario(saver: Any) -> bool:
    """True when an AsyncRedisSaver checkpoint reads back another writer's value."""
    await foreign(InMemorySaver())
    return bool(await foreign(saver))


if __name__ == "__main__":
    run(lambda: on_async_redis(scenario))
