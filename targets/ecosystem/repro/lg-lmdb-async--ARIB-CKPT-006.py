"""ARIB-CKPT-006 on lg-lmdb-async, outside the harness: an alist of one thread and namespace that
names another scope yields this scope's checkpoints in AsyncLMDBSaver (langgraph-checkpoint-lmdb
0.3.1). Its alist passes its arguments to LMDBSaver.list, which reads neither ``filter`` (a
metadata filter that only another scope's checkpoints match gives back all of this one's) nor the
config's ``checkpoint_id`` (listing one id gives the whole thread; an id of another thread gives
this thread's). InMemorySaver's alist yields nothing for the first and third and only the named
checkpoint for the second. Run in the lg-lmdb environment of `nox -s ecosystem`; exit 1:
reproduced."""

from __future__ import annotations

from typing import Any

from _async_savers import on_async_lmdb
from _repro import run
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.memory import InMemorySaver


def cfg(thread: str, cid: str | None = None) -> dict[str, Any]:
    """A config of ``thread``'s root namespace, with ``cid`` when given."""
    conf: dict[str, Any] = {"thread_id": thread, "checkpoint_ns": ""}
    if cid:
        conf["checkpoint_id"] = cid
    return {"configurable": conf}


async def listed(saver: Any) -> dict[str, list[str]]:
    """Three checkpoints (aput) on thread T and three on Tx (metadata scope names the thread);
    the ids each scoped alist of T yields."""
    for n, thread in enumerate(("T", "Tx")):
        parent = cfg(thread)
        for step in range(3):
            checkpoint = empty_checkpoint()
            checkpoint["id"] = f"1ef00000-000{n}-6000-8000-00000000000{step}"
            parent = await saver.aput(parent, checkpoint, {"scope": thread, "step": step}, {})
    own = "1ef00000-0000-6000-8000-000000000000"
    other = "1ef00000-0001-6000-8000-000000000002"
    asks = {"alist(T, filter scope=Tx)": (cfg("T"), {"scope": "Tx"}),
            f"alist(T, checkpoint_id={own} of T)": (cfg("T", own), None),
            f"alist(T, checkpoint_id={other} of Tx)": (cfg("T", other), None)}
    ids: dict[str, list[str]] = {}
    for name, (conf, flt) in asks.items():
        ids[name] = [t.checkpoint["id"] async for t in saver.alist(conf, filter=flt)]
    return ids


async def scenario(saver: Any) -> bool:
    """True when AsyncLMDBSaver's scoped listings differ from InMemorySaver's."""
    ref = await listed(InMemorySaver())
    got = await listed(saver)
    for name in ref:
        print(f"{name}: InMemorySaver {ref[name]}, AsyncLMDBSaver {got[name]}")
    return got != ref


if __name__ == "__main__":
    run(lambda: on_async_lmdb(scenario))
