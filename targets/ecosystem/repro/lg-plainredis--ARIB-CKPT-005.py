"""ARIB-CKPT-005 on lg-plainredis, outside the harness: RedisSaver (langgraph-checkpoint-plainredis
0.1.0) returns a checkpoint's pending writes by (task_id, idx), not in the writes_sort_key order
(task_path, task_id, idx) that langgraph-checkpoint 4.3.2 documents for get_tuple and that
InMemorySaver keeps (see _writes_order.py). Run in the lg-plainredis environment of `nox -s
ecosystem` (a throwaway redis-server through arib's ServiceManager); exit 1: reproduced."""

from __future__ import annotations

from _repro import run
from _writes_order import compare
from langgraph_checkpoint_plainredis import RedisSaver

from arib.ground.services import ServiceManager


def main() -> bool:
    """True when RedisSaver breaks the documented order."""
    with ServiceManager(environ={}) as manager:
        saver = RedisSaver(url=manager.start("redis").url)
        try:
            return compare("RedisSaver", saver)
        finally:
            saver.close()


if __name__ == "__main__":
    run(main)
