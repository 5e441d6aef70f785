"""Hand-written mutants of SQLiteSession and AdvancedSQLiteSession (overrides, our own code)."""

from __future__ import annotations

import json
import sqlite3
import time
from typing import Any

from arib.mutants.base import handwritten, load_class

SQLITE = "agents.memory.sqlite_session"
ADVANCED = "agents.extensions.memory.advanced_sqlite_session"


@handwritten(
    target="sqlite-file",
    module=SQLITE,
    qualname="SQLiteSession.add_items",
    defect="lost append: every 10th add_items call returns success and stores nothing",
)
def sqlite_drops_every_tenth_append() -> None:
    cls = load_class(SQLITE, "SQLiteSession")
    original = cls.add_items

    async def add_items(self: Any, items: list[Any]) -> None:
        calls = self.__dict__.setdefault("_arib_calls", [0])
        calls[0] += 1
        if calls[0] % 10 == 0:
            return
        await original(self, items)

    cls.add_items = add_items


def _make_close_racy(cls: Any) -> None:
    """Replace cls.close by one that fails when another close is in flight."""
    original = cls.close

    def close(self: Any) -> None:
        inflight = self.__dict__.setdefault("_arib_inflight", [0])
        inflight[0] += 1
        try:
            time.sleep(0.005)
            if inflight[0] > 1:
                raise sqlite3.ProgrammingError("Cannot operate on a closed database.")
            original(self)
        finally:
            inflight[0] -= 1

    cls.close = close


@handwritten(
    target="sqlite-file",
    module=SQLITE,
    qualname="SQLiteSession.close",
    defect="racy close: a close that overlaps another close fails with a closed-database "
    "error instead of returning",
)
def sqlite_racy_close() -> None:
    _make_close_racy(load_class(SQLITE, "SQLiteSession"))


@handwritten(
    target="advanced-sqlite-file",
    module=ADVANCED,
    qualname="AdvancedSQLiteSession.close",
    defect="racy close: a close that overlaps another close fails with a closed-database "
    "error instead of returning",
)
def advanced_racy_close() -> None:
    _make_close_racy(load_class(ADVANCED, "AdvancedSQLiteSession"))


@handwritten(
    target="sqlite-file",
    module=SQLITE,
    qualname="SQLiteSession.add_items",
    defect="silent drop after close: a write to a closed session returns success and "
    "stores nothing",
)
def sqlite_silent_drop_after_close() -> None:
    cls = load_class(SQLITE, "SQLiteSession")
    original = cls.add_items

    async def add_items(self: Any, items: list[Any]) -> None:
        if self._closed:
            return
        await original(self, items)

    cls.add_items = add_items


@handwritten(
    target="sqlite-file",
    module=SQLITE,
    qualname="SQLiteSession.add_items",
    defect="persist-then-raise after close: the write is committed through a new "
    "connection, then refused with an error",
)
def sqlite_persist_then_raise_after_close() -> None:
    cls = load_class(SQLITE, "SQLiteSession")
    original = cls.add_items

    async def add_items(self: Any, items: list[Any]) -> None:
        if self._closed:
            conn = sqlite3.connect(str(self.db_path))
            with conn:
                conn.executemany(
                    f"INSERT INTO {self.messages_table} (session_id, message_data) VALUES (?, ?)",
                    [(self.session_id, json.dumps(item)) for item in items],
                )
            conn.close()
            raise RuntimeError("SQLiteSession is closed")
        await original(self, items)

    cls.add_items = add_items


@handwritten(
    target="advanced-sqlite-file",
    module=ADVANCED,
    qualname="AdvancedSQLiteSession.add_items",
    defect="corrupted content: items are stored with a zero-width space appended to their "
    "content",
)
def advanced_corrupts_content() -> None:
    cls = load_class(ADVANCED, "AdvancedSQLiteSession")
    original = cls.add_items

    async def add_items(self: Any, items: list[Any]) -> None:
        damaged = [
            {**item, "content": item["content"] + "\u200b"}
            if isinstance(item, dict) and isinstance(item.get("content"), str)
            else item
            for item in items
        ]
        await original(self, damaged)

    cls.add_items = add_items


@handwritten(
    target="advanced-sqlite-file",
    module=ADVANCED,
    qualname="AdvancedSQLiteSession.close",
    defect="silent reopen after close: close() leaves the session usable, so a later write "
    "is silently committed",
)
def advanced_close_is_a_no_op() -> None:
    cls = load_class(ADVANCED, "AdvancedSQLiteSession")

    def close(self: Any) -> None:
        return None

    cls.close = close
