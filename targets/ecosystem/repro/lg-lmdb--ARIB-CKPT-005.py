"""ARIB-CKPT-005 on lg-lmdb, outside the harness: LMDBSaver (langgraph-checkpoint-lmdb 0.3.1)
returns a checkpoint's pending writes by (task_id, idx), not in the writes_sort_key order
(task_path, task_id, idx) that langgraph-checkpoint 4.3.2 documents for get_tuple and that
InMemorySaver keeps (see _writes_order.py). Run in the lg-lmdb environment of `nox -s
ecosystem`: `python targets/ecosystem/repro/lg-lmdb--ARIB-CKPT-005.py`; exit 1: reproduced."""

from __future__ import annotations

import tempfile

import lmdb
from _repro import run
from _writes_order import compare
from langgraph_checkpoint_lmdb import LMDBSaver


def main() -> bool:
    """True when LMDBSaver breaks the documented order."""
    return compare("LMDBSaver", LMDBSaver(lmdb.open(tempfile.mkdtemp(), max_dbs=10)))


if __name__ == "__main__":
    run(main)
