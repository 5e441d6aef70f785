"""Constructor options of the reference backend: a keyed store and a per-read scan budget.

EncryptedSession takes ``encryption_key`` and ``max_scan_items``; checks of what they promise
(ARIB-KEY-001, ARIB-BUDGET-001) need the reference to offer the same notions, in the simplest
obviously correct form:

- ``encryption_key``: every row this instance writes is sealed with an HMAC-SHA256 of the
  session id and the item's JSON under the key. A row whose seal this key does not
  authenticate (another key's, or an unsealed row) is treated like a row that does not
  decode: reads skip it and do not count it, pops leave it in place. Without a key rows are
  plain JSON, as before, and an instance without a key authenticates nothing (it reads a
  sealed row as the JSON object it is). The seal authenticates; it does not hide the item.
  The options apply to the main history (get_items, add_items, pop_item); branches and the
  compaction snapshot are not keyed.
- ``max_scan_items``: a positive number of rows one ``get_items`` call may look at; 0 or a
  negative budget is refused (ValueError). With a budget, a read looks at no more than the
  budget's newest rows: it answers when they hold the result (the newest ``limit`` readable
  items, or every row of the session), and otherwise raises RuntimeError, as a read cannot
  tell a complete result from a truncated one. A negative limit is refused (ValueError).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import sqlite3
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    import anyio

T = TypeVar("T")

UNREADABLE = object()  # what open_body returns for a row this instance cannot read

OPTION_DOCS = {
    "encryption_key": "arib.targets.openai_agents.reference_options: rows are sealed with an "
                      "HMAC under the key; rows another key sealed are skipped by reads and "
                      "left by pops",
    "max_scan_items": "arib.targets.openai_agents.reference_options: a positive per-read row "
                      "budget; a read that needs more rows raises RuntimeError",
}


def decode_body(body: Any) -> Any:
    """The JSON value a stored body holds, or UNREADABLE (a row another writer left broken)."""
    try:
        return json.loads(body)
    except (TypeError, ValueError):
        return UNREADABLE


class StoreOptionsMixin:
    """Adds the two options to ReferenceSession (which provides the attributes declared here)."""

    if TYPE_CHECKING:
        session_id: str
        _lock: anyio.Lock

        async def _transact(self, work: Callable[[sqlite3.Connection], T],
                            write: bool) -> T: ...

    encryption_key: str | None = None
    max_scan_items: int | None = None

    def _configure(self, encryption_key: str | None = None,
                   max_scan_items: int | None = None) -> None:
        """Take the options (called by __init__); refuse a budget that is not positive."""
        if max_scan_items is not None and max_scan_items <= 0:
            raise ValueError(f"max_scan_items={max_scan_items!r} must be positive or None")
        if encryption_key is not None and not encryption_key:
            raise ValueError("encryption_key must not be empty (or None for no key)")
        self.encryption_key = encryption_key
        self.max_scan_items = max_scan_items

    def _seal_of(self, text: str) -> str:
        assert self.encryption_key is not None
        message = f"{self.session_id}\0{text}".encode()
        return hmac.new(self.encryption_key.encode(), message, hashlib.sha256).hexdigest()

    def _seal(self, item: Any) -> str:
        """The body stored for ``item``: its JSON, sealed when the instance has a key."""
        text = json.dumps(item)
        if self.encryption_key is None:
            return text
        return json.dumps({"sealed": self._seal_of(text), "body": text})

    def _open(self, body: Any) -> Any:
        """The item a stored body holds, or UNREADABLE: undecodable, or (with a key) not
        sealed under this key."""
        value = decode_body(body)
        if self.encryption_key is None or value is UNREADABLE:
            return value
        if not (isinstance(value, dict) and isinstance(value.get("body"), str)
                and isinstance(value.get("sealed"), str)
                and hmac.compare_digest(value["sealed"], self._seal_of(value["body"]))):
            return UNREADABLE
        return decode_body(value["body"])

    async def _budgeted_items(self, limit: int | None) -> list[Any]:
        """get_items under ``max_scan_items``: the newest ``limit`` readable items (all when
        None) found among the budget's newest rows, else RuntimeError."""
        budget = self.max_scan_items
        assert budget is not None
        if limit is not None and limit < 0:
            raise ValueError(f"limit={limit!r}: a negative limit is refused when "
                             f"max_scan_items is set; pass 0 for no items")
        if limit == 0:
            return []

        def read(conn: sqlite3.Connection) -> list[Any]:
            return conn.execute("SELECT body FROM items WHERE session_id = ? "
                                "ORDER BY seq DESC LIMIT ?", (self.session_id, budget)).fetchall()

        async with self._lock:
            rows = await self._transact(read, write=False)
        items = [item for (body,) in reversed(rows) if (item := self._open(body)) is not UNREADABLE]
        if limit is not None and len(items) >= limit:
            return items[len(items) - limit:]
        if len(rows) < budget:
            return items
        raise RuntimeError(f"max_scan_items={budget} rows do not hold the result of "
                           f"get_items(limit={limit!r}); raise the budget")
