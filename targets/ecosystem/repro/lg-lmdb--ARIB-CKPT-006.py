"""ARIB-CKPT-006 on lg-lmdb, outside the harness: a listing of one thread and namespace that names
another scope returns this scope's checkpoints in LMDBSaver (langgraph-checkpoint-lmdb 0.3.1).
Its list() reads neither ``filter`` (a metadata filter that only another scope's checkpoints
match gives back all of this one's) nor the config's ``checkpoint_id`` (listing one id gives
the whole thread; an id of another thread gives this thread's). InMemorySaver returns nothing
for the first and third and only the named checkpoint for the second. Run in the lg-lmdb
environment of `nox -s ecosystem`; exit 1: reproduced."""

from __future__ import annotations

import tempfile
from typing import Any

import lmdb
from _repro import run
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.memory import InMemorySaver
from langgraph_checkpoint_lmdb import LMDBSaver


def cfg(thread: str, cid: str | None = None) -> dict[str, Any]:
    """A config of ``thread``'s root namespace, with ``cid`` when given."""
    conf: dict[str, Any] = {"thread_id": thread, "checkpoint_ns": ""}
    if cid:
        conf["checkpoint_id"] = cid
    return {"configurable": conf}


def listed(saver: Any) -> dict[str, list[str]]:
    """Three checkpoints on thread T and three on T+'x' (metadata scope names the thread);
    the ids each scoped listing of T returns."""
    for n, thread in enumerate(("T", "Tx")):
        parent = cfg(thread)
        for step in range(3):
            checkpoint = empty_checkpoint()
            checkpoint["id"] = f"1ef00000-000{n}-6000-8000-00000000000{step}"
            parent = saver.put(parent, checkpoint, {"scope": thread, "step": step}, {})
    own = "1ef00000-0000-6000-8000-000000000000"
    other = "1ef00000-0001-6000-8000-000000000002"
    asks = {"list(T, filter scope=Tx)": (cfg("T"), {"scope": "Tx"}),
            f"list(T, checkpoint_id={own} of T)": (cfg("T", own), None),
            f"list(T, checkpoint_id={other} of Tx)": (cfg("T", other), None)}
    return {name: [t.checkpoint["id"] for t in saver.list(conf, filter=flt)]
            for name, (conf, flt) in asks.items()}


def main() -> bool:
    """True when LMDBSaver's scoped listings differ from InMemorySaver's."""
    ref = listed(InMemorySaver())
    got = listed(LMDBSaver(lmdb.open(tempfile.mkdtemp(), max_dbs=10)))
    for name in ref:
        print(f"{name}: InMemorySaver {ref[name]}, LMDBSaver {got[name]}")
    return got != ref


if __name__ == "__main__":
    run(main)
