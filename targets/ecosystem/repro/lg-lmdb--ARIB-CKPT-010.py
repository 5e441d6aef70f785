"""ARIB-CKPT-010 on lg-lmdb, outside the harness: LMDBSaver (langgraph-checkpoint-lmdb 0.3.1)
has no get_delta_channel_history of its own, so it inherits langgraph-checkpoint 4.3.2's, which
replays each checkpoint's writes in get_tuple's order; LMDBSaver's get_tuple gives them by
(task_id, idx) (the ARIB-CKPT-005 finding), so the history of a DeltaChannel comes out of the
writes_sort_key order the release documents and InMemorySaver keeps (see _delta_history.py). Run
in the lg-lmdb environment of `nox -s ecosystem`; exit 1: reproduced."""

from __future__ import annotations

import asyncio
import tempfile

import lmdb
from _delta_history import compare, sync_call
from _repro import run
from langgraph_checkpoint_lmdb import LMDBSaver


def main() -> bool:
    """True when LMDBSaver's history breaks the documented one."""
    saver = LMDBSaver(lmdb.open(tempfile.mkdtemp(), max_dbs=10))
    return asyncio.run(compare(saver, sync_call(saver), sync_call))


if __name__ == "__main__":
    run(main)
