"""Hand-written mutants: a closed session that lets pop, clear or an empty batch through
(ARIB-CONC-003)."""

from __future__ import annotations

import sqlite3
from typing import Any

from arib.mutants.base import handwritten, load_class

REF = "arib.targets.openai_agents.reference"
SQLITE = "agents.memory.sqlite_session"
ADVANCED = "agents.extensions.memory.advanced_sqlite_session"


@handwritten(
    target="reference",
    module=REF,
    qualname="ReferenceSession.pop_item",
    defect="silent pop after close: pop_item on a closed session returns None as if the "
    "session were empty",
)
def reference_pop_after_close_returns_none() -> None:
    cls = load_class(REF, "ReferenceSession")
    original = cls.pop_item

    async def pop_item(self: Any) -> Any | None:
        if getattr(self, "_closed", False):
            return None
        return await original(self)

    cls.pop_item = pop_item


@handwritten(
    target="reference",
    module=REF,
    qualname="ReferenceSession.clear_session",
    defect="clear after close succeeds: clear_session on a closed session empties the store "
    "through a new connection and returns",
)
def reference_clear_after_close_succeeds() -> None:
    cls = load_class(REF, "ReferenceSession")
    original = cls.clear_session

    async def clear_session(self: Any) -> None:
        if self._closed:
            conn = sqlite3.connect(self.db_path)
            with conn:
                conn.execute("DELETE FROM items WHERE session_id = ?", (self.session_id,))
            conn.close()
            return
        await original(self)

    cls.clear_session = clear_session


@handwritten(
    target="reference",
    module=REF,
    qualname="ReferenceSession.add_items",
    defect="empty-batch fast path before the closed check: add_items([]) on a closed "
    "session returns success",
)
def reference_empty_add_skips_closed_check() -> None:
    cls = load_class(REF, "ReferenceSession")
    original = cls.add_items

    async def add_items(self: Any, items: list[Any]) -> None:
        if not items:
            return
        await original(self, items)

    cls.add_items = add_items


@handwritten(
    target="reference",
    module=REF,
    qualname="ReferenceSession.pop_item",
    defect="pop-then-raise after close: pop_item on a closed session deletes the newest item "
    "through a new connection, then raises",
)
def reference_pop_after_close_commits_then_raises() -> None:
    cls = load_class(REF, "ReferenceSession")
    original = cls.pop_item

    async def pop_item(self: Any) -> Any | None:
        if self._closed:
            conn = sqlite3.connect(self.db_path)
            with conn:
                conn.execute(
                    "DELETE FROM items WHERE seq = (SELECT MAX(seq) FROM items "
                    "WHERE session_id = ?)", (self.session_id,))
            conn.close()
            raise RuntimeError("session is closed")
        return await original(self)

    cls.pop_item = pop_item


@handwritten(
    target="sqlite-file",
    module=SQLITE,
    qualname="SQLiteSession.add_items",
    defect="empty-batch fast path before the closed check: add_items([]) on a closed "
    "session returns success",
)
def sqlite_empty_add_skips_closed_check() -> None:
    cls = load_class(SQLITE, "SQLiteSession")
    original = cls.add_items

    async def add_items(self: Any, items: list[Any]) -> None:
        if not items:
            return
        await original(self, items)

    cls.add_items = add_items


@handwritten(
    target="sqlite-file",
    module=SQLITE,
    qualname="SQLiteSession.clear_session",
    defect="clear after close reopens: clear_session on a closed session opens a new "
    "connection, deletes the session's messages and returns",
)
def sqlite_clear_after_close_reopens() -> None:
    cls = load_class(SQLITE, "SQLiteSession")
    original = cls.clear_session

    async def clear_session(self: Any) -> None:
        if self._closed:
            conn = sqlite3.connect(str(self.db_path))
            with conn:
                conn.execute(f"DELETE FROM {self.messages_table} WHERE session_id = ?",
                             (self.session_id,))
            conn.close()
            return
        await original(self)

    cls.clear_session = clear_session


@handwritten(
    target="advanced-sqlite-file",
    module=ADVANCED,
    qualname="AdvancedSQLiteSession.pop_item",
    defect="silent pop after close: pop_item on a closed session returns None as if the "
    "session were empty",
)
def advanced_pop_after_close_returns_none() -> None:
    cls = load_class(ADVANCED, "AdvancedSQLiteSession")
    original = cls.pop_item

    async def pop_item(self: Any) -> Any | None:
        if self._closed:
            return None
        return await original(self)

    cls.pop_item = pop_item
