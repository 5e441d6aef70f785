"""Hand-written mutants for ARIB-CANCEL-001: defects that a cancelled add_items() exposes."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from typing import Any

import anyio

from arib.mutants.base import handwritten, load_class

REF = "arib.targets.openai_agents.reference"
SQLITE = "agents.memory.sqlite_session"
INSERT = "INSERT OR IGNORE INTO items (session_id, item_key, body) VALUES (?, ?, ?)"


@handwritten(
    target="reference",
    module=REF,
    qualname="ReferenceSession.add_items",
    defect="non-atomic batch: each item is committed in its own transaction with a yield "
    "between them, so a cancellation mid-batch leaves part of it stored",
)
def reference_cancel_partial_batch() -> None:
    cls = load_class(REF, "ReferenceSession")

    async def add_items(self: Any, items: list[Any]) -> None:
        async with self._lock:
            for item in items:
                row = (self.session_id, self._key(item), json.dumps(item))

                def write(conn: sqlite3.Connection, row: tuple[Any, ...] = row) -> None:
                    conn.execute(INSERT, row)

                await self._transact(write, write=True)
                await anyio.sleep(0)

    cls.add_items = add_items


@handwritten(
    target="reference",
    module=REF,
    qualname="ReferenceSession.add_items",
    defect="late commit: a cancelled append is parked instead of abandoned and replayed by "
    "the session's next write, so a caller that read it as absent and retried stores it twice",
)
def reference_cancel_replays_parked_write() -> None:
    cls = load_class(REF, "ReferenceSession")
    original = cls.add_items

    async def add_items(self: Any, items: list[Any]) -> None:
        parked = self.__dict__.setdefault("_arib_parked", [])
        while parked:
            await original(self, parked.pop(0))
        try:
            await anyio.sleep(0)
        except BaseException:
            parked.append(list(items))
            raise
        await original(self, items)

    cls.add_items = add_items


@handwritten(
    target="sqlite-file",
    module=SQLITE,
    qualname="SQLiteSession.add_items",
    defect="non-atomic batch: each item is inserted and committed by its own worker-thread "
    "call, with a yield between items, so a cancellation mid-batch leaves part of it stored",
)
def sqlite_cancel_partial_batch() -> None:
    cls = load_class(SQLITE, "SQLiteSession")

    async def add_items(self: Any, items: list[Any]) -> None:
        for item in items:

            def write(item: Any = item) -> None:
                with self._locked_connection() as conn:
                    conn.execute(
                        f"INSERT INTO {self.messages_table} (session_id, message_data) "
                        "VALUES (?, ?)",
                        (self.session_id, json.dumps(item)),
                    )
                    conn.commit()

            await asyncio.to_thread(write)
            await asyncio.sleep(0)

    cls.add_items = add_items
