"""Hand-written pop_item() mutants (paired with ARIB-POP-001): each models one defect."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import anyio

from arib.mutants.base import handwritten, load_class

REF = "arib.targets.openai_agents.reference"
SQLITE = "agents.memory.sqlite_session"
ASYNC_SQLITE = "agents.extensions.memory.async_sqlite_session"


@handwritten(
    target="reference",
    module=REF,
    qualname="ReferenceSession.pop_item",
    defect="check-then-act pop: the tail is read under the lock, the lock is released, and "
    "the row is deleted later, so racing pops return the same item",
)
def reference_pop_reads_then_deletes() -> None:
    cls = load_class(REF, "ReferenceSession")

    async def pop_item(self: Any) -> Any | None:
        async with self._lock:
            row = self._live().execute(
                "SELECT seq, body FROM items WHERE session_id = ? ORDER BY seq DESC LIMIT 1",
                (self.session_id,),
            ).fetchone()
        if row is None:
            return None
        await anyio.sleep(0)
        async with self._lock:
            conn = self._live()
            with conn:
                conn.execute("DELETE FROM items WHERE seq = ?", (row[0],))
        return json.loads(row[1])

    cls.pop_item = pop_item


@handwritten(
    target="reference",
    module=REF,
    qualname="ReferenceSession.pop_item",
    defect="try-lock pop: a pop that finds another operation in progress returns None as if "
    "the session were empty, instead of waiting its turn",
)
def reference_pop_gives_up_when_busy() -> None:
    cls = load_class(REF, "ReferenceSession")
    original = cls.pop_item

    async def pop_item(self: Any) -> Any | None:
        if self._lock.locked():
            return None
        return await original(self)

    cls.pop_item = pop_item


@handwritten(
    target="sqlite-file",
    module=SQLITE,
    qualname="SQLiteSession.pop_item",
    defect="check-then-act pop: the newest row is selected in one worker-thread call and "
    "deleted by id in a later one, so racing pops return the same item",
)
def sqlite_pop_selects_then_deletes() -> None:
    cls = load_class(SQLITE, "SQLiteSession")

    async def pop_item(self: Any) -> Any | None:
        def newest() -> Any:
            with self._locked_connection() as conn:
                return conn.execute(
                    f"SELECT id, message_data FROM {self.messages_table} "
                    "WHERE session_id = ? ORDER BY id DESC LIMIT 1",
                    (self.session_id,),
                ).fetchone()

        row = await asyncio.to_thread(newest)
        if row is None:
            return None

        def delete() -> None:
            with self._locked_connection() as conn:
                conn.execute(f"DELETE FROM {self.messages_table} WHERE id = ?", (row[0],))
                conn.commit()

        await asyncio.to_thread(delete)
        return json.loads(row[1])

    cls.pop_item = pop_item


@handwritten(
    target="async-sqlite-file",
    module=ASYNC_SQLITE,
    qualname="AsyncSQLiteSession.pop_item",
    defect="check-then-act pop: the newest row is selected under the session lock and "
    "deleted under a second acquisition, so racing pops return the same item",
)
def async_sqlite_pop_selects_then_deletes() -> None:
    cls = load_class(ASYNC_SQLITE, "AsyncSQLiteSession")

    async def pop_item(self: Any) -> Any | None:
        async with self._locked_connection() as conn:
            cursor = await conn.execute(
                f"SELECT id, message_data FROM {self.messages_table} "
                "WHERE session_id = ? ORDER BY id DESC LIMIT 1",
                (self.session_id,),
            )
            row = await cursor.fetchone()
        if row is None:
            return None
        async with self._locked_connection() as conn:
            await conn.execute(f"DELETE FROM {self.messages_table} WHERE id = ?", (row[0],))
            await conn.commit()
        return json.loads(row[1])

    cls.pop_item = pop_item


@handwritten(
    target="async-sqlite-file",
    module=ASYNC_SQLITE,
    qualname="AsyncSQLiteSession.pop_item",
    defect="unsettled pop: the removal is never committed, so the popping session sees the "
    "item gone while every other instance on the store still reads it",
)
def async_sqlite_pop_left_uncommitted() -> None:
    cls = load_class(ASYNC_SQLITE, "AsyncSQLiteSession")

    async def pop_item(self: Any) -> Any:
        async with self._locked_connection() as conn:
            row = await claim_tail(self, conn)
        return None if row is None else json.loads(row[0])

    cls.pop_item = pop_item


async def claim_tail(session: Any, conn: Any) -> Any:
    """AsyncSQLiteSession's claim of its newest row (DELETE ... RETURNING), not committed."""
    table = session.messages_table
    cursor = await conn.execute(
        f"DELETE FROM {table} WHERE id = (SELECT id FROM {table} WHERE session_id = ? "
        "ORDER BY id DESC LIMIT 1) RETURNING message_data",
        (session.session_id,),
    )
    row = await cursor.fetchone()
    await cursor.close()
    return row
