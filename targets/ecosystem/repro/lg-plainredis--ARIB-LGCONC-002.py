"""ARIB-LGCONC-002 on lg-plainredis, outside the harness: two forked processes, each with its own
RedisSaver (langgraph-checkpoint-plainredis 0.1.0) opened on one redis-server, released at one
instant, put three checkpoints each on one thread id; read back by a fresh RedisSaver, one
process's checkpoints hold the other's value: both version channel ``value`` 1, 2, 3 (plain
integers) and its blobs share one key per version.

Run in the lg-plainredis environment of `nox -s ecosystem` (a throwaway redis-server through
arib's ServiceManager); exit 1: reproduced. The cause is the one of the ARIB-LGFORK-001 and
ARIB-LGCONC-001 findings (see _redis_writers.py)."""

from __future__ import annotations

from _redis_writers import seen_on_a_fresh_server
from _repro import run

if __name__ == "__main__":
    run(lambda: seen_on_a_fresh_server("redis", open_at_go=False))
