"""Shared by the <lane>--ARIB-CKPT-005.py reproductions: the order get_tuple gives a
checkpoint's pending writes, against the order LangGraph documents and against InMemorySaver.

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


def order_of(saver: Any) -> list[tuple[str, str]]:
    """Put one checkpoint and the TASKS' writes on ``saver``; (task, channel) as get_tuple
    returns them."""
    start = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
    checkpoint = empty_checkpoint()
    saved = saver.put(start, checkpoint, {"step": 0}, {})
    takes_path = "task_path" in inspect.signature(saver.put_writes).parameters
    for task, path, channels in TASKS:
        writes = [(ch, f"{task}:{ch}") for ch in channels]
        if takes_path:
            saver.put_writes(saved, writes, task, path)
        else:  # an older put_writes has no task_path: the order can only be (task_id, idx)
            saver.put_writes(saved, writes, task)
    got = saver.get_tuple(saved)
    return [(w[0], w[1]) for w in got.pending_writes]


def compare(name: str, saver: Any) -> bool:
    """Print the three orders; True when ``saver`` breaks the order its LangGraph documents,
    False when it keeps it or when the installed LangGraph documents no order."""
    want = documented()
    got = order_of(saver)
    ref = order_of(InMemorySaver())
    print(f"put_writes calls, in order: {[(t, p, list(c)) for t, p, c in TASKS]}")
    print(f"(task_path, task_id, idx) order:  {want}")
    print(f"InMemorySaver's get_tuple order: {ref}")
    print(f"{name}'s get_tuple order: {got}")
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
