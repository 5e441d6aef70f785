"""Shared by the <lane>--ARIB-CKPT-005.py reproductions: the order get_tuple (aget_tuple on an
async lane) gives a checkpoint's pending writes, against the order LangGraph documents and against
InMemorySaver.

The pinned LangGraph (langgraph-checkpoint 4.3.2) documents it in BaseCheckpointSaver.get_tuple:
"Its `pending_writes` must be in `writes_sort_key` order", writes_sort_key being
(task_path, task_id, idx), where a special channel's idx is its WRITES_IDX_MAP entry (ERROR is
-1, so a task's error comes before its other writes). get_delta_channel_history replays writes in
that order, so an order-sensitive reducer rebuilds another value from a saver that breaks it.
"""

from __future__ import annotations

import inspect
from typing import Any

from langgraph.checkpoint import base
from langgraph.checkpoint.base import WRITES_IDX_MAP, empty_checkpoint
from langgraph.checkpoint.memory import InMemorySaver

# (task_id, task_path, channels) in the order put_writes is called: task ids and task paths sort
# differently, and task-01 writes an error (a special channel, negative idx) after ch0.
TASKS = (("task-02", "~__pregel_pull, node-1", ("ch0", "ch1")),
         ("task-01", "~__pregel_pull, node-0", ("ch0", "__error__")),
         ("task-00", "~__pregel_pull, node-1", ("ch0", "ch1")),
         ("task-03", "~__pregel_pull, node-0", ("ch0", "ch1")))


def documented() -> list[tuple[str, str]]:
    """(task, channel) in (task_path, task_id, idx) order, computed here from TASKS."""
    keyed = [((path, task, WRITES_IDX_MAP.get(ch, idx)), (task, ch))
             for task, path, channels in TASKS for idx, ch in enumerate(channels)]
    return [pair for _, pair in sorted(keyed)]


def _start() -> tuple[dict[str, Any], Any]:
    """The config of thread t's root namespace and an empty checkpoint to put there."""
    return {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}, empty_checkpoint()


def _writes(task: str, channels: tuple[str, ...]) -> list[tuple[str, str]]:
    """``task``'s writes: one per channel, its value naming the task and the channel."""
    return [(ch, f"{task}:{ch}") for ch in channels]


def order_of(saver: Any) -> list[tuple[str, str]]:
    """Put one checkpoint and the TASKS' writes on ``saver``; (task, channel) as get_tuple
    returns them."""
    start, checkpoint = _start()
    saved = saver.put(start, checkpoint, {"step": 0}, {})
    takes_path = "task_path" in inspect.signature(saver.put_writes).parameters
    for task, path, channels in TASKS:
        if takes_path:
            saver.put_writes(saved, _writes(task, channels), task, path)
        else:  # an older put_writes has no task_path: the order can only be (task_id, idx)
            saver.put_writes(saved, _writes(task, channels), task)
    got = saver.get_tuple(saved)
    return [(w[0], w[1]) for w in got.pending_writes]


async def aorder_of(saver: Any) -> list[tuple[str, str]]:
    """``order_of`` through the async methods: aput, aput_writes, aget_tuple."""
    start, checkpoint = _start()
    saved = await saver.aput(start, checkpoint, {"step": 0}, {})
    takes_path = "task_path" in inspect.signature(saver.aput_writes).parameters
    for task, path, channels in TASKS:
        if takes_path:
            await saver.aput_writes(saved, _writes(task, channels), task, path)
        else:
            await saver.aput_writes(saved, _writes(task, channels), task)
    got = await saver.aget_tuple(saved)
    return [(w[0], w[1]) for w in got.pending_writes]


def compare(name: str, saver: Any) -> bool:
    """Print the three orders; True when ``saver`` breaks the order its LangGraph documents,
    False when it keeps it or when the installed LangGraph documents no order."""
    return judge(name, order_of(saver), order_of(InMemorySaver()), "")


async def acompare(name: str, saver: Any) -> bool:
    """``compare`` through the async methods of ``saver`` and of InMemorySaver."""
    got = await aorder_of(saver)
    return judge(name, got, await aorder_of(InMemorySaver()), "a")


def judge(name: str, got: list[tuple[str, str]], ref: list[tuple[str, str]], a: str) -> bool:
    """Print the documented order, InMemorySaver's ``ref`` and ``name``'s ``got`` (``a`` is "a"
    when they came through the async methods, else ""); True when ``got`` breaks the documented
    order."""
    want = documented()
    print(f"{a}put_writes calls, in order: {[(t, p, list(c)) for t, p, c in TASKS]}")
    print(f"(task_path, task_id, idx) order:  {want}")
    print(f"InMemorySaver's {a}get_tuple order: {ref}")
    print(f"{name}'s {a}get_tuple order: {got}")
    if not hasattr(base, "writes_sort_key"):
        print("this langgraph-checkpoint has no writes_sort_key and documents no order of "
              "pending_writes: not a violation of this version's contract "
              f"({name} {'keeps' if got == want else 'does not keep'} the order later "
              "versions document)")
        return False
    if got == want:
        print(f"{name} returns the documented order")
        return False
    print(f"{name} returns the writes out of writes_sort_key order")
    return True
