"""Defects shared by hand-written mutants of several savers (our reference and the real ones):
each takes the saver's original method and gives the defective one to install over it."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any


def special_kept_first(original: Callable[..., None]) -> Callable[..., None]:
    """``put_writes`` that skips a special channel the task already wrote (keeps the first);
    where the release defines no special channel (langgraph-checkpoint 1.0.1) it changes
    nothing: that defect cannot exist there."""
    import langgraph.checkpoint.base as base

    specials: dict[str, int] = getattr(base, "WRITES_IDX_MAP", {})

    def put_writes(self: Any, config: Any, writes: Any, task_id: str,
                   task_path: str = "") -> None:
        stored = self.get_tuple(config)
        have = {(t, c) for t, c, _ in (stored.pending_writes if stored else [])}
        kept = [(c, v) for c, v in writes
                if c not in specials or (task_id, c) not in have]
        if kept:
            original(self, config, kept, task_id, task_path)

    return put_writes


def namespace_prefix_list(original: Callable[..., Iterator[Any]]) -> Callable[..., Iterator[Any]]:
    """``list`` whose namespace matches by prefix: ns 'a' also gives 'a|b' and 'ab'."""

    def list_(self: Any, config: Any, *, filter: Any = None,  # noqa: A002
              before: Any = None, limit: Any = None) -> Iterator[Any]:
        conf = dict((config or {}).get("configurable", {}))
        ns = conf.pop("checkpoint_ns", None)
        if config is None or ns is None:
            yield from original(self, config, filter=filter, before=before, limit=limit)
            return
        found = [t for t in original(self, {"configurable": conf}, filter=filter,
                                     before=before)
                 if str(t.config["configurable"]["checkpoint_ns"]).startswith(str(ns))]
        yield from (found if limit is None else found[:limit])

    return list_
