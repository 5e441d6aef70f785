"""Hand-written write-atomicity mutants (paired with ARIB-ATOM-001): one defect each."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import Callable
from typing import Any, TypeVar

from arib.mutants.base import handwritten, load_class

REF = "arib.targets.openai_agents.reference"
SQLITE = "agents.memory.sqlite_session"
T = TypeVar("T")


@handwritten(
    target="reference",
    module=REF,
    qualname="ReferenceSession._transact",
    defect="group commit: writes are committed two at a time and items are encoded inside the "
    "transaction, so a write that fails rolls back the acknowledged write before it",
)
def reference_writes_commit_lazily() -> None:
    cls = load_class(REF, "ReferenceSession")

    async def _transact(self: Any, work: Callable[[sqlite3.Connection], T], write: bool) -> T:
        conn = self._live()
        if not conn.in_transaction:
            conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")
        try:
            result = work(conn)
        except BaseException:
            conn.rollback()
            self._pending_writes = 0
            raise
        if write:
            self._pending_writes = getattr(self, "_pending_writes", 0) + 1
            if self._pending_writes >= 2:
                conn.commit()
                self._pending_writes = 0
        return result

    async def add_items(self: Any, items: list[Any]) -> None:
        def append(conn: sqlite3.Connection) -> None:
            for item in items:
                conn.execute("INSERT OR IGNORE INTO items (session_id, item_key, body) "
                             "VALUES (?, ?, ?)", (self.session_id, self._key(item),
                                                  json.dumps(item)))

        async with self._lock:
            await self._transact(append, write=True)

    cls._transact = _transact
    cls.add_items = add_items


@handwritten(
    target="sqlite-memory",
    module=SQLITE,
    qualname="SQLiteSession.add_items",
    defect="append without its own commit: the rows wait on the shared connection for the "
    "next write's commit, so a write that fails rolls them back after they were acknowledged",
)
def sqlite_writes_commit_lazily() -> None:
    cls = load_class(SQLITE, "SQLiteSession")

    async def add_items(self: Any, items: list[Any]) -> None:
        self._check_not_closed()
        if not items:
            return

        def append() -> None:
            with self._locked_connection() as conn:
                try:
                    self._insert_items(conn, items)
                except BaseException:
                    conn.rollback()
                    raise

        await asyncio.to_thread(append)

    cls.add_items = add_items
