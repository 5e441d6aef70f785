"""Calling one chosen half of a saver's interface, whatever half its lane serves: the sync
methods from a worker thread (as a sync graph run or an application's thread calls them) or
from the event loop's own thread, and the async methods (``a<name>``) from the loop. What the
checks of the two halves (ARIB-CKPT-008, -009) share."""

from __future__ import annotations

import functools
from typing import Any

import anyio.to_thread

from arib.checks.langgraph._contract import named
from arib.checks.langgraph._saver import writes_of


def offers(saver: Any, method: str) -> bool:
    """Whether the saver's class has ``method`` at all (older releases lack some)."""
    return getattr(type(saver), method, None) is not None


def task_paths() -> bool:
    """Whether the installed release orders pending writes by task path first
    (``writes_sort_key``: (task_path, task_id, idx); before it, (task_id, idx))."""
    import langgraph.checkpoint.base as base

    return hasattr(base, "writes_sort_key")


def _sync_now(saver: Any, method: str, *args: Any, **kwargs: Any) -> Any:
    result = getattr(saver, method)(*args, **kwargs)
    return list(result) if method == "list" else result


async def sync_half(saver: Any, method: str, *args: Any, **kwargs: Any) -> Any:
    """``saver.<method>(...)`` called from a worker thread (``list`` consumed to a list)."""
    return await anyio.to_thread.run_sync(
        functools.partial(_sync_now, saver, method, *args, **kwargs))


def sync_on_loop(saver: Any, method: str, *args: Any, **kwargs: Any) -> Any:
    """``saver.<method>(...)`` called on the event loop's own thread (``list`` consumed)."""
    return _sync_now(saver, method, *args, **kwargs)


async def async_half(saver: Any, method: str, *args: Any, **kwargs: Any) -> Any:
    """``await saver.a<method>(...)`` (``alist`` consumed to a list)."""
    if method == "list":
        return [item async for item in saver.alist(*args, **kwargs)]
    return await getattr(saver, f"a{method}")(*args, **kwargs)


def tuple_view(item: Any) -> Any:
    """What two reads of one checkpoint must agree on: config, parent, checkpoint, metadata and
    pending writes (None stays None)."""
    if item is None:
        return None
    return (named(item.config), named(item.parent_config), item.checkpoint,
            dict(item.metadata or {}), writes_of(item))


def listing_view(items: list[Any]) -> list[Any]:
    """``tuple_view`` of every listed tuple, in the order listed."""
    return [tuple_view(item) for item in items]
