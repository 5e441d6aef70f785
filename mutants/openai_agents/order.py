"""Hand-written append/read-order mutants (paired with ARIB-ORDER-001): one defect each."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from arib.mutants.base import handwritten, load_class

REF = "arib.targets.openai_agents.reference"
SQLITE = "agents.memory.sqlite_session"
ASYNC_SQLITE = "agents.extensions.memory.async_sqlite_session"


@handwritten(
    target="reference",
    module=REF,
    qualname="ReferenceSession.add_items",
    defect="non-atomic batch: each item of a batch is appended under its own acquisition of "
    "the lock, so concurrent batches interleave and a racing clear can split one",
)
def reference_add_batch_item_by_item() -> None:
    cls = load_class(REF, "ReferenceSession")

    async def add_items(self: Any, items: list[Any]) -> None:
        for item in items:
            async with self._lock:
                conn = self._live()
                with conn:
                    conn.execute(
                        "INSERT OR IGNORE INTO items (session_id, item_key, body) "
                        "VALUES (?, ?, ?)",
                        (self.session_id, self._key(item), json.dumps(item)),
                    )

    cls.add_items = add_items


@handwritten(
    target="reference",
    module=REF,
    qualname="ReferenceSession.get_items",
    defect="wrong sort key: a full read sorts rows by their stored JSON text instead of by "
    "insertion position, so the history comes back grouped by content, not by time",
)
def reference_read_orders_by_body() -> None:
    cls = load_class(REF, "ReferenceSession")
    original = cls.get_items

    async def get_items(self: Any, limit: int | None = None) -> list[Any]:
        if limit is not None:
            return list(await original(self, limit))
        async with self._lock:
            rows = self._live().execute(
                "SELECT body FROM items WHERE session_id = ? ORDER BY body ASC",
                (self.session_id,),
            ).fetchall()
        return [json.loads(body) for (body,) in rows]

    cls.get_items = get_items


@handwritten(
    target="async-sqlite-file",
    module=ASYNC_SQLITE,
    qualname="AsyncSQLiteSession.add_items",
    defect="non-atomic batch: each item of a batch is inserted and committed under its own "
    "acquisition of the session lock, so concurrent batches interleave",
)
def async_sqlite_add_batch_item_by_item() -> None:
    cls = load_class(ASYNC_SQLITE, "AsyncSQLiteSession")

    async def add_items(self: Any, items: list[Any]) -> None:
        for item in items:
            async with self._locked_connection() as conn:
                await conn.execute(
                    f"INSERT OR IGNORE INTO {self.sessions_table} (session_id) VALUES (?)",
                    (self.session_id,),
                )
                await conn.execute(
                    f"INSERT INTO {self.messages_table} (session_id, message_data) "
                    "VALUES (?, ?)",
                    (self.session_id, json.dumps(item)),
                )
                await conn.commit()

    cls.add_items = add_items


@handwritten(
    target="sqlite-file",
    module=SQLITE,
    qualname="SQLiteSession.add_items",
    defect="non-atomic batch: each item of a batch is inserted and committed in its own "
    "worker-thread call, so concurrent batches interleave",
)
def sqlite_add_batch_item_by_item() -> None:
    cls = load_class(SQLITE, "SQLiteSession")

    async def add_items(self: Any, items: list[Any]) -> None:
        def insert(item: Any) -> None:
            with self._locked_connection() as conn:
                conn.execute(
                    f"INSERT OR IGNORE INTO {self.sessions_table} (session_id) VALUES (?)",
                    (self.session_id,),
                )
                conn.execute(
                    f"INSERT INTO {self.messages_table} (session_id, message_data) "
                    "VALUES (?, ?)",
                    (self.session_id, json.dumps(item)),
                )
                conn.commit()

        for item in items:
            await asyncio.to_thread(insert, item)

    cls.add_items = add_items
