"""ARIB-LGCONC-001 on lg-plainredis, outside the harness: two writers (threads, one RedisSaver)
each put a chain of three checkpoints of their own on one thread id at the same time, as two
runs of one thread do; each reads back a checkpoint holding the other writer's value.

The cause is the one of lg-plainredis--ARIB-LGFORK-001.py: langgraph-checkpoint-plainredis
0.1.0 keys a channel's blob by (thread, ns, channel, version) with integer versions (1, 2, 3 on
every chain started from nothing), so the two chains' blobs share keys and the later put wins.
InMemorySaver, whose versions carry a random part, keeps each chain's values. Run in the
lg-plainredis environment of `nox -s ecosystem` (a throwaway redis-server through arib's
ServiceManager); exit 1: reproduced."""

from __future__ import annotations

import threading
from typing import Any

from _repro import run
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.memory import InMemorySaver
from langgraph_checkpoint_plainredis import RedisSaver

from arib.ground.services import ServiceManager

STEPS = 3


def writer(saver: Any, w: int, barrier: threading.Barrier, saved: list[Any]) -> None:
    """Writer ``w``: STEPS checkpoints on thread 't', value 'w<w>-s<step>'."""
    parent: Any = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
    version = None
    barrier.wait()
    for step in range(STEPS):
        version = saver.get_next_version(version, None)
        checkpoint = empty_checkpoint()
        checkpoint["id"] = f"1ef00000-000{w}-6000-8000-00000000000{step}"
        checkpoint["channel_values"] = {"value": f"w{w}-s{step}"}
        checkpoint["channel_versions"] = {"value": version}
        parent = saver.put(parent, checkpoint, {"step": step}, {"value": version})
        saved.append((parent, f"w{w}-s{step}"))


def foreign(saver: Any) -> list[str]:
    """Run both writers together; every checkpoint that reads back another value."""
    barrier = threading.Barrier(2)
    saved: list[Any] = []
    threads = [threading.Thread(target=writer, args=(saver, w, barrier, saved)) for w in (0, 1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wrong = []
    for config, value in saved:
        got = saver.get_tuple(config).checkpoint["channel_values"].get("value")
        if got != value:
            wrong.append(f"{config['configurable']['checkpoint_id']} put {value!r} "
                         f"reads {got!r}")
    print(f"{type(saver).__name__}: {len(saved)} checkpoints put, {len(wrong)} read back "
          f"another writer's value: {wrong}")
    return wrong


def main() -> bool:
    """True when a RedisSaver checkpoint reads back another writer's value."""
    foreign(InMemorySaver())
    with ServiceManager(environ={}) as manager:
        saver = RedisSaver(url=manager.start("redis").url)
        try:
            return bool(foreign(saver))
        finally:
            saver.close()


if __name__ == "__main__":
    run(main)
