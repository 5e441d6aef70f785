"""Shared by the lg-plainredis(-async)--ARIB-LGCONC-002/LGSETUP-001.py reproductions: two forked
processes, each with its own saver on one store, put a chain of checkpoints on one thread id at
the same time (as two workers of one app running one thread do); a fresh instance then reads
every checkpoint back.

langgraph-checkpoint-plainredis 0.1.0 keys a channel's blob by (thread, ns, channel, version)
and keeps BaseCheckpointSaver's get_next_version, a plain integer, so both processes' chains
version ``value`` 1, 2, 3 and write its blobs under the same keys: whichever put lands later
wins, and the other process's checkpoints read its value. The same processes on SqliteSaver (a
file every process opens), whose versions carry a random part, read back what each put.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import sqlite3
import tempfile
from typing import Any

from langgraph.checkpoint.base import empty_checkpoint

STEPS = 3
WRITERS = 2


def _checkpoints(saver: Any, w: int) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """Writer ``w``'s chain: (checkpoint, new versions) per step, values ``value`` and
    ``w<w>``, versions from the saver's own get_next_version."""
    chain, version = [], None
    for step in range(STEPS):
        version = saver.get_next_version(version, None)
        versions = {"value": version, f"w{w}": version}
        checkpoint = empty_checkpoint()
        checkpoint["id"] = f"1ef00000-000{w}-6000-8000-00000000000{step}"
        checkpoint["channel_values"] = {"value": f"w{w}-s{step}", f"w{w}": step}
        checkpoint["channel_versions"] = dict(versions)
        chain.append((checkpoint, versions))
    return chain


def _open(kind: str, where: str) -> Any:
    """A new saver of ``kind`` ("redis", "aredis" or "sqlite") on the store at ``where``."""
    if kind == "sqlite":
        from langgraph.checkpoint.sqlite import SqliteSaver

        return SqliteSaver(sqlite3.connect(where, check_same_thread=False, timeout=30))
    from langgraph_checkpoint_plainredis import AsyncRedisSaver, RedisSaver

    return (AsyncRedisSaver if kind == "aredis" else RedisSaver)(url=where)


async def _put_chain(saver: Any, kind: str, w: int) -> list[Any]:
    """Put writer ``w``'s chain on thread 'shared'; (config, values put) per checkpoint."""
    parent: Any = {"configurable": {"thread_id": "shared", "checkpoint_ns": ""}}
    saved = []
    for checkpoint, versions in _checkpoints(saver, w):
        args = (parent, checkpoint, {"step": 0, "writer": w}, versions)
        parent = await saver.aput(*args) if kind == "aredis" else saver.put(*args)
        saved.append((parent, dict(checkpoint["channel_values"])))
    return saved


def _writer(kind: str, where: str, w: int, open_at_go: bool, go: Any, out: Any) -> None:
    """One forked writer: open its saver (before or after ``go``), put its chain, report."""
    async def body() -> list[Any]:
        saver = None if open_at_go else _open(kind, where)
        go.wait()
        if saver is None:
            saver = _open(kind, where)
            if hasattr(saver, "setup"):  # the fresh store is set up by every writer at once
                saver.setup()
        return await _put_chain(saver, kind, w)

    try:
        out.put((w, asyncio.run(body()), None))
    except Exception as exc:  # noqa: BLE001 - reported to the parent as the observation
        out.put((w, [], f"{type(exc).__name__}: {exc}"))


async def _read(saver: Any, kind: str, config: Any) -> dict[str, Any] | None:
    """The channel values of the checkpoint ``config`` names, None when there is none."""
    got = await saver.aget_tuple(config) if kind == "aredis" else saver.get_tuple(config)
    return None if got is None else dict(got.checkpoint["channel_values"])


def race(kind: str, where: str, open_at_go: bool) -> list[str]:
    """Fork WRITERS writers on the store at ``where``, release them at one instant, then read
    every checkpoint back through a fresh instance; the checkpoints that read other values."""
    context = multiprocessing.get_context("fork")
    go, out = context.Barrier(WRITERS), context.Queue()
    writers = [context.Process(target=_writer, args=(kind, where, w, open_at_go, go, out))
               for w in range(WRITERS)]
    for process in writers:
        process.start()
    reports = [out.get(timeout=60) for _ in writers]
    for process in writers:
        process.join(60)

    async def check() -> list[str]:
        saver = _open(kind, where)
        wrong = []
        for w, saved, error in sorted(reports, key=lambda r: r[0]):
            if error:
                wrong.append(f"writer {w} raised {error}")
            for config, values in saved:
                got = await _read(saver, kind, config)
                if got != values:
                    wrong.append(f"writer {w}'s {config['configurable']['checkpoint_id']} put "
                                 f"{values} reads {got}")
        return wrong

    wrong = asyncio.run(check())
    opened = "each opens its saver at the go" if open_at_go else "each opened it before"
    print(f"{kind} ({opened}): {WRITERS} processes x {STEPS} checkpoints on one thread, "
          f"{len(wrong)} read back other values: {wrong}")
    return wrong


def reference() -> list[str]:
    """The same race on SqliteSaver over one file, set up once first (SqliteSaver sets its
    file up at first use, and racing that is another check's)."""
    path = os.path.join(tempfile.mkdtemp(), "checkpoints.sqlite")
    _open("sqlite", path).setup()
    return race("sqlite", path, open_at_go=False)


def seen_on_a_fresh_server(kind: str, open_at_go: bool) -> bool:
    """The reference race on SQLite, then ``race`` on a throwaway redis-server (arib's
    ServiceManager): True when a checkpoint put by one process reads back another's value."""
    from arib.ground.services import ServiceManager

    reference()
    with ServiceManager(environ={}) as manager:
        return bool(race(kind, manager.start("redis").url, open_at_go))
