"""ARIB-CKPT-010 on lg-plainredis, outside the harness: RedisSaver
(langgraph-checkpoint-plainredis 0.1.0) inherits langgraph-checkpoint 4.3.2's
get_delta_channel_history, which replays each checkpoint's writes in get_tuple's order, and
RedisSaver's get_tuple gives them by (task_id, idx) (the ARIB-CKPT-005 finding): the history of a
DeltaChannel comes out of the documented writes_sort_key order. Its seed is wrong too: a fork
from the seed's parent versions the channel with the same plain integer, and the blob keyed by
(thread, ns, channel, version) is overwritten (the ARIB-LGFORK-001 finding), so the history
seeds the main line with the fork's value. InMemorySaver gives the documented history (see
_delta_history.py). Run in the lg-plainredis environment of `nox -s ecosystem` (a throwaway
redis-server through arib's ServiceManager); exit 1: reproduced."""

from __future__ import annotations

import asyncio

from _delta_history import compare, sync_call
from _repro import run
from langgraph_checkpoint_plainredis import RedisSaver

from arib.ground.services import ServiceManager


def main() -> bool:
    """True when RedisSaver's history breaks the documented one."""
    with ServiceManager(environ={}) as manager:
        saver = RedisSaver(url=manager.start("redis").url)
        try:
            return asyncio.run(compare(saver, sync_call(saver), sync_call))
        finally:
            saver.close()


if __name__ == "__main__":
    run(main)
