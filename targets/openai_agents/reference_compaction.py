"""The reference backend's compaction snapshot: a bounded tail and a conditional suffix swap.

``OpenAIResponsesCompactionSession`` (openai-agents 0.24.0) asks the store it wraps for
``_get_compaction_snapshot(limit, *, prune_prefix=None)``. A store without it gets the SDK's
fallback: a whole-history replacement (``clear_session()`` then ``add_items()``) based on a
read made *after* the compact request returned. That fallback loses an item another instance
appended while the request was in flight, and a reader can see the history empty between the
clear and the add; the reference keeps every invariant, so it offers the snapshot itself.

The contract, as the SDK uses it (``agents.memory.session._CompactionSnapshot``):

- ``items`` are the newest ``limit`` items, oldest first; ``complete`` says whether they are
  the whole history;
- ``replace_suffix(start, output)`` replaces ``items[start:]`` by ``output`` in one
  transaction, and only if those rows are still the newest rows of the session, unchanged;
  otherwise it changes nothing and returns False. It returns True once committed;
- ``prune_prefix(item)`` (EncryptedSession passes one that is true for expired items): in the
  same transaction, the contiguous run of oldest rows for which it is true is removed, and
  nothing after the first row for which it is false.

Everything runs through ``ReferenceSession._transact`` under the session lock, so a closed
session refuses the swap, a busy database is retried, and no transaction spans an await.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol


@dataclass(frozen=True)
class ReferenceSnapshot:
    """The shape of the SDK's ``_CompactionSnapshot``: items, completeness, the swap."""

    items: list[Any]
    complete: bool
    replace_suffix: Callable[[int, list[Any]], Awaitable[bool]]


class _Store(Protocol):
    session_id: str
    _lock: Any

    async def _transact(self, work: Callable[[sqlite3.Connection], Any], write: bool) -> Any: ...


class CompactionSnapshotMixin:
    """Adds ``_get_compaction_snapshot`` to ReferenceSession (see the module docstring)."""

    async def _get_compaction_snapshot(
        self: _Store,
        limit: int,
        *,
        prune_prefix: Callable[[Any], bool] | None = None,
    ) -> ReferenceSnapshot | None:
        """The newest ``limit`` items and a swap of any suffix of them, if still unchanged."""
        session_id = self.session_id

        def read(conn: sqlite3.Connection) -> tuple[list[tuple[int, str]], bool]:
            rows = conn.execute(
                "SELECT seq, body FROM items WHERE session_id = ? ORDER BY seq DESC LIMIT ?",
                (session_id, limit),
            ).fetchall()[::-1]
            older = rows and conn.execute(
                "SELECT 1 FROM items WHERE session_id = ? AND seq < ? LIMIT 1",
                (session_id, rows[0][0]),
            ).fetchone()
            return rows, not older

        async with self._lock:
            rows, complete = await self._transact(read, write=False)
        items = [json.loads(body) for _, body in rows]

        async def replace_suffix(start: int, output: list[Any]) -> bool:
            expected = [tuple(row) for row in rows[start:]]
            if not expected:
                return False

            def swap(conn: sqlite3.Connection) -> bool:
                current = conn.execute(
                    "SELECT seq, body FROM items WHERE session_id = ? "
                    "ORDER BY seq DESC LIMIT ?",
                    (session_id, len(expected)),
                ).fetchall()[::-1]
                if [tuple(row) for row in current] != expected:
                    return False
                first = expected[0][0]
                if prune_prefix is not None:
                    _prune_oldest(conn, session_id, first, prune_prefix)
                conn.execute("DELETE FROM items WHERE session_id = ? AND seq >= ?",
                             (session_id, first))
                conn.executemany(
                    "INSERT OR IGNORE INTO items (session_id, item_key, body) VALUES (?, ?, ?)",
                    [(session_id, _key(item), json.dumps(item)) for item in output],
                )
                return True

            async with self._lock:
                return bool(await self._transact(swap, write=True))

        return ReferenceSnapshot(items, complete, replace_suffix)


def _key(item: Any) -> str | None:
    """The idempotency key ReferenceSession stores for an item (its string ``id``)."""
    key = item.get("id") if isinstance(item, dict) else None
    return key if isinstance(key, str) and key else None


def _prune_oldest(conn: sqlite3.Connection, session_id: str, before: int,
                  prune: Callable[[Any], bool]) -> None:
    """Delete the oldest rows (older than ``before``) up to the first one ``prune`` keeps."""
    rows = conn.execute(
        "SELECT seq, body FROM items WHERE session_id = ? AND seq < ? ORDER BY seq ASC",
        (session_id, before),
    ).fetchall()
    last = None
    for seq, body in rows:
        if not prune(json.loads(body)):
            break
        last = seq
    if last is not None:
        conn.execute("DELETE FROM items WHERE session_id = ? AND seq <= ?", (session_id, last))
