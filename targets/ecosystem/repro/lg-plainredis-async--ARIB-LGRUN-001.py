"""ARIB-LGRUN-001 on lg-plainredis-async, outside the harness: AsyncRedisSaver
(langgraph-checkpoint-plainredis 0.1.0) reads a checkpoint in separate Redis round trips; an
aget_tuple paused between two of them while another instance runs adelete_thread returns a
checkpoint that was never there: its payload from before the delete, its values or its writes
from after (see _redis_torn_read.py).

Run in the lg-plainredis environment of `nox -s ecosystem` (a throwaway redis-server through
arib's ServiceManager); exit 1: reproduced."""

from __future__ import annotations

from _redis_torn_read import torn_on_a_fresh_server
from _repro import run

if __name__ == "__main__":
    run(lambda: torn_on_a_fresh_server("aredis"))
