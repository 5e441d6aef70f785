"""ARIB-LGSETUP-001 on lg-plainredis, outside the harness: two processes forked before anything is
on a fresh redis-server open a RedisSaver (langgraph-checkpoint-plainredis 0.1.0) each at one
instant (the class has no setup() to run) and put three checkpoints each on one thread id; read
back by a fresh RedisSaver, one process's checkpoints hold the other's value: both version
channel ``value`` 1, 2, 3 (plain integers) and its blobs share one key per version. Starting on a
fresh store changes nothing: the loss is of the puts, as in ARIB-LGCONC-002.

Run in the lg-plainredis environment of `nox -s ecosystem` (a throwaway redis-server through
arib's ServiceManager); exit 1: reproduced. The cause is the one of the ARIB-LGFORK-001 and
ARIB-LGCONC-001 findings (see _redis_writers.py)."""

from __future__ import annotations

from _redis_writers import race, reference
from _repro import run

from arib.ground.services import ServiceManager


def main() -> bool:
    """True when a checkpoint put by one process reads back another process's value."""
    reference()
    with ServiceManager(environ={}) as manager:
        return bool(race("redis", manager.start("redis").url, open_at_go=True))


if __name__ == "__main__":
    run(main)
