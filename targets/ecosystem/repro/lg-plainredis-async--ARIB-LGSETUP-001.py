"""ARIB-LGSETUP-001 on lg-plainredis-async, outside the harness: two processes forked before
anything is on a fresh redis-server open an AsyncRedisSaver (langgraph-checkpoint-plainredis
0.1.0) each at one instant (the class has no setup() to run) and aput three checkpoints each on
one thread id; read back by a fresh AsyncRedisSaver, one process's checkpoints hold the other's
value: both version channel ``value`` 1, 2, 3 (plain integers) and its blobs share one key per
version. Starting on a fresh store changes nothing: the loss is of the puts, as in
ARIB-LGCONC-002.

Run in the lg-plainredis environment of `nox -s ecosystem` (a throwaway redis-server through
arib's ServiceManager); exit 1: reproduced. The cause is the one of the ARIB-LGFORK-001 and
ARIB-LGCONC-001 findings (see _redis_writers.py)."""

from __future__ import annotations

from _redis_writers import seen_on_a_fresh_server
from _repro import run

if __name__ == "__main__":
    run(lambda: seen_on_a_fresh_server("aredis", open_at_go=True))
