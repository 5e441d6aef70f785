"""Shared by the lg-plainredis(-async)--ARIB-LGRUN-001.py reproductions: a read of a thread's
latest checkpoint, paused inside its call, while another instance deletes the thread.

langgraph-checkpoint-plainredis 0.1.0 reads a checkpoint in separate round trips to Redis: GET
of its payload, then MGET of its channel blobs, then HGETALL of its pending writes, with nothing
holding them together (no MULTI, no WATCH, no Lua script), while delete_thread removes the keys
in one transaction. A delete landing between two of the read's round trips makes the read return
a checkpoint that existed at no instant: its payload from before the delete and its values or
writes from after (none). At one instant the thread was either the whole checkpoint, values and
writes, or nothing, so get_tuple may give either but no mix. The script pauses the reader's
Redis client at the first MGET (and, in a second round, the first HGETALL) the read makes, lets
delete_thread run to its end meanwhile, then lets the read go on.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from langgraph.checkpoint.base import empty_checkpoint

CONFIG = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
POINTS = ("mget", "hgetall")


def _open(kind: str, url: str) -> Any:
    from langgraph_checkpoint_plainredis import AsyncRedisSaver, RedisSaver

    return (AsyncRedisSaver if kind == "aredis" else RedisSaver)(url=url)


async def _do(saver: Any, kind: str, name: str, *args: Any) -> Any:
    """``saver``'s method ``name`` (its a-prefixed coroutine on the async class)."""
    if kind == "aredis":
        return await getattr(saver, f"a{name}")(*args)
    return getattr(saver, name)(*args)


def _shown(got: Any) -> Any:
    """What a read shows: None, or (checkpoint id, channel values, pending writes)."""
    if got is None:
        return None
    return (got.checkpoint["id"], dict(got.checkpoint["channel_values"]),
            sorted(tuple(w) for w in got.pending_writes))


def _hold(client: Any, method: str, kind: str, held: threading.Event,
          release: threading.Event) -> None:
    """Make ``client``'s first ``method`` call wait (after setting ``held``) for
    ``release``."""
    original = getattr(client, method)
    first = [True]

    def pause() -> None:
        if first[0]:
            first[0] = False
            held.set()
            release.wait(30)

    if kind == "aredis":
        async def wrapped_async(*args: Any, **kwargs: Any) -> Any:
            await asyncio.to_thread(pause)
            return await original(*args, **kwargs)
        setattr(client, method, wrapped_async)
    else:
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            pause()
            return original(*args, **kwargs)
        setattr(client, method, wrapped)


async def _round(kind: str, url: str, point: str) -> bool:
    """One round on a fresh thread; True when the paused read shows a mix."""
    writer, reader = _open(kind, url), _open(kind, url)
    first = empty_checkpoint()
    first["id"] = "1ef00000-0000-6000-8000-000000000000"
    first["channel_values"], first["channel_versions"] = {"value": "v0"}, {"value": 1}
    saved = await _do(writer, kind, "put", CONFIG, first, {"step": 0}, {"value": 1})
    latest = empty_checkpoint()
    latest["id"] = "1ef00000-0001-6000-8000-000000000000"
    latest["channel_values"], latest["channel_versions"] = {"value": "v1"}, {"value": 2}
    saved = await _do(writer, kind, "put", saved, latest, {"step": 1}, {"value": 2})
    await _do(writer, kind, "put_writes", saved, [("value", "late")], "task-1")
    before = _shown(await _do(writer, kind, "get_tuple", CONFIG))
    held, release = threading.Event(), threading.Event()
    _hold(reader.client, point, kind, held, release)
    if kind == "aredis":
        reading: Any = asyncio.ensure_future(reader.aget_tuple(CONFIG))
    else:
        reading = asyncio.ensure_future(asyncio.to_thread(reader.get_tuple, CONFIG))
    if not await asyncio.to_thread(held.wait, 10):
        raise RuntimeError(f"the read never reached {point}")
    await _do(writer, kind, "delete_thread", "t")
    after = _shown(await _do(writer, kind, "get_tuple", CONFIG))
    release.set()
    shown = _shown(await reading)
    mixed = shown not in (before, after)
    print(f"read paused at its first {point.upper()}, delete_thread run meanwhile:\n"
          f"  the thread before the delete: {before}\n  after it: {after}\n"
          f"  the paused read returned: {shown}"
          + ("  <- neither: a mix of before and after" if mixed else ""))
    for saver in (writer, reader):
        await _do(saver, kind, "close")
    return mixed


def torn(kind: str, url: str) -> bool:
    """Both rounds (paused at MGET, at HGETALL); True when some read showed a mix."""
    return any([asyncio.run(_round(kind, url, point)) for point in POINTS])


def torn_on_a_fresh_server(kind: str) -> bool:
    """``torn`` on a throwaway redis-server (arib's ServiceManager): True when a paused read
    showed the thread neither as before nor as after the delete."""
    from arib.ground.services import ServiceManager

    with ServiceManager(environ={}) as manager:
        return torn(kind, manager.start("redis").url)
