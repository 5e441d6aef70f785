"""Shared by the <lane>--ARIB-CKPT-010.py reproductions: what get_delta_channel_history
(aget_delta_channel_history on an async lane) gives for a channel ``d`` on a short chain with a
fork, against what langgraph-checkpoint 4.3.2 documents and against InMemorySaver.

The chain: ``root`` holds d = "root"; ``main`` (child of root) holds d = "main", and two tasks
write d to it, task-a (task path "~b") then task-b (task path "~a"); ``fork`` (another child of
root, time travel) holds d = "fork"; ``tip`` (child of main) holds no d. The history of ``tip``
must be main's writes in writes_sort_key order, (task_path, task_id, idx), so task-b's first,
and main's value as the seed. The release's DeltaChannelHistory says "Within a single
checkpoint, writes are ordered by `writes_sort_key`", and its default get_delta_channel_history,
which a saver without its own inherits, "replays each checkpoint's writes in `get_tuple`'s
`pending_writes` order, which `get_tuple` must return in `writes_sort_key` order". A graph with a
DeltaChannel rebuilds the channel from this history when it resumes, so a history in another
order or with another seed rebuilds a value the run never had.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import Any

from langgraph.checkpoint import base
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.memory import InMemorySaver

# (task id, task path, value written to d), in the order put_writes is called
TASKS = (("task-a", "~b", "a"), ("task-b", "~a", "b"))
Call = Callable[..., Awaitable[Any]]


def sync_call(saver: Any) -> Call:
    """``saver``'s sync methods behind the awaitable interface the scenario uses."""
    async def call(name: str, *args: Any, **kwargs: Any) -> Any:
        return getattr(saver, name)(*args, **kwargs)
    return call


def async_call(saver: Any) -> Call:
    """``saver``'s async methods (a + name) for the scenario."""
    async def call(name: str, *args: Any, **kwargs: Any) -> Any:
        return await getattr(saver, f"a{name}")(*args, **kwargs)
    return call


async def _put(call: Call, parent: Any, cid: str, values: dict[str, Any],
               versions: dict[str, Any]) -> Any:
    """Put a checkpoint holding ``values``; the channels in ``values`` are the ones it moved to
    a new version (a channel it does not hold keeps the parent's version, no new blob)."""
    checkpoint = empty_checkpoint()
    checkpoint["id"] = cid
    checkpoint["channel_values"] = values
    checkpoint["channel_versions"] = dict(versions)
    new_versions = {ch: v for ch, v in versions.items() if ch in values}
    return await call("put", parent, checkpoint, {"step": 0}, new_versions)


async def history(saver: Any, call: Call) -> tuple[list[str], Any]:
    """Put the chain on ``saver`` through ``call``; d's history at ``tip``: (the writes' values
    in the order given, the seed or "(no seed)")."""
    start = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
    v_root = saver.get_next_version(None, None)
    root = await _put(call, start, "1ef00000-0000-6000-8000-000000000000", {"d": "root"},
                      {"d": v_root})
    v_main = saver.get_next_version(v_root, None)
    main = await _put(call, root, "1ef00000-0001-6000-8000-000000000000", {"d": "main"},
                      {"d": v_main})
    takes_path = "task_path" in inspect.signature(saver.put_writes).parameters
    for task, path, value in TASKS:
        args = (main, [("d", value)], task, path) if takes_path else (main, [("d", value)], task)
        await call("put_writes", *args)
    v_fork = saver.get_next_version(v_root, None)  # the fork starts again from root's version
    await _put(call, root, "1ef00000-0001-6000-8000-000000000001", {"d": "fork"}, {"d": v_fork})
    tip = await _put(call, main, "1ef00000-0002-6000-8000-000000000000", {}, {"d": v_main})
    got = await call("get_delta_channel_history", config=tip, channels=["d"])
    entry = got["d"]
    print(f"{type(saver).__name__}: versions of d: root {v_root!r}, main {v_main!r}, fork "
          f"{v_fork!r}; history of d at tip: writes {[tuple(w) for w in entry['writes']]}, "
          f"seed {entry.get('seed', '(no seed)')!r}")
    return [w[2] for w in entry["writes"]], entry.get("seed", "(no seed)")


def documented() -> list[str]:
    """main's writes to d in writes_sort_key order, computed here from TASKS."""
    return [value for path, task, value in sorted((p, t, v) for t, p, v in TASKS)]


async def compare(saver: Any, call: Call, ref_call: Callable[[Any], Call]) -> bool:
    """Print InMemorySaver's and ``saver``'s history (``ref_call`` wraps InMemorySaver the way
    ``call`` wraps ``saver``); True when ``saver``'s breaks what the release documents."""
    reference = InMemorySaver()
    await history(reference, ref_call(reference))
    writes, seed = await history(saver, call)
    want = documented()
    print(f"documented: writes {want} (writes_sort_key order), seed 'main' (main's value)")
    wrong = []
    if not hasattr(base, "writes_sort_key"):
        print("this langgraph-checkpoint has no writes_sort_key and documents no order of a "
              "checkpoint's writes: the order is not judged")
    elif writes != want:
        wrong.append(f"writes in the order {writes}, not {want}")
    if seed != "main":
        wrong.append(f"seed {seed!r}, not 'main'")
    print(f"{type(saver).__name__}: " + ("; ".join(wrong) if wrong else "as documented"))
    return bool(wrong)
