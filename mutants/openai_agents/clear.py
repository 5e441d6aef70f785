"""Hand-written clear_session() mutants (paired with ARIB-CLEAR-001): one defect each."""

from __future__ import annotations

import asyncio
from typing import Any

from arib.mutants.base import handwritten, load_class

REF = "arib.targets.openai_agents.reference"
SQLITE = "agents.memory.sqlite_session"
ASYNC_SQLITE = "agents.extensions.memory.async_sqlite_session"


@handwritten(
    target="reference",
    module=REF,
    qualname="ReferenceSession.clear_session",
    defect="counted clear: the rows are counted once, then the newest row is deleted that many "
    "times, each under its own lock, so a batch appended meanwhile is half deleted and old "
    "rows survive",
)
def reference_clear_pops_counted_items() -> None:
    cls = load_class(REF, "ReferenceSession")

    async def clear_session(self: Any) -> None:
        async with self._lock:
            (count,) = self._live().execute(
                "SELECT COUNT(*) FROM items WHERE session_id = ?", (self.session_id,)
            ).fetchone()
        for _ in range(count):
            async with self._lock:
                conn = self._live()
                with conn:
                    conn.execute(
                        "DELETE FROM items WHERE seq = (SELECT MAX(seq) FROM items "
                        "WHERE session_id = ?)",
                        (self.session_id,),
                    )

    cls.clear_session = clear_session


@handwritten(
    target="async-sqlite-file",
    module=ASYNC_SQLITE,
    qualname="AsyncSQLiteSession.clear_session",
    defect="counted clear: the rows are counted once, then the newest row is deleted that many "
    "times, each under its own lock, so a batch appended meanwhile is half deleted and old "
    "rows survive",
)
def async_sqlite_clear_pops_counted_items() -> None:
    cls = load_class(ASYNC_SQLITE, "AsyncSQLiteSession")

    async def clear_session(self: Any) -> None:
        table = self.messages_table
        async with self._locked_connection() as conn:
            cursor = await conn.execute(
                f"SELECT COUNT(*) FROM {table} WHERE session_id = ?", (self.session_id,)
            )
            (count,) = await cursor.fetchone()
        for _ in range(count):
            async with self._locked_connection() as conn:
                await conn.execute(
                    f"DELETE FROM {table} WHERE id = (SELECT MAX(id) FROM {table} "
                    "WHERE session_id = ?)",
                    (self.session_id,),
                )
                await conn.commit()

    cls.clear_session = clear_session


@handwritten(
    target="sqlite-file",
    module=SQLITE,
    qualname="SQLiteSession.clear_session",
    defect="clear by cascade: only the session row is deleted, trusting ON DELETE CASCADE, "
    "which SQLite does not enforce without PRAGMA foreign_keys, so every message survives",
)
def sqlite_clear_relies_on_cascade() -> None:
    cls = load_class(SQLITE, "SQLiteSession")

    async def clear_session(self: Any) -> None:
        def clear() -> None:
            with self._locked_connection() as conn:
                conn.execute(
                    f"DELETE FROM {self.sessions_table} WHERE session_id = ?",
                    (self.session_id,),
                )
                conn.commit()

        await asyncio.to_thread(clear)

    cls.clear_session = clear_session


@handwritten(
    target="sqlite-file",
    module=SQLITE,
    qualname="SQLiteSession.clear_session",
    defect="counted clear: the rows are counted in one worker-thread call, then the newest "
    "row is deleted that many times in separate calls, so a batch appended meanwhile is half "
    "deleted and old rows survive",
)
def sqlite_clear_pops_counted_items() -> None:
    cls = load_class(SQLITE, "SQLiteSession")

    async def clear_session(self: Any) -> None:
        table = self.messages_table

        def count() -> int:
            with self._locked_connection() as conn:
                return int(conn.execute(
                    f"SELECT COUNT(*) FROM {table} WHERE session_id = ?", (self.session_id,)
                ).fetchone()[0])

        def delete_newest() -> None:
            with self._locked_connection() as conn:
                conn.execute(
                    f"DELETE FROM {table} WHERE id = (SELECT MAX(id) FROM {table} "
                    "WHERE session_id = ?)",
                    (self.session_id,),
                )
                conn.commit()

        for _ in range(await asyncio.to_thread(count)):
            await asyncio.to_thread(delete_newest)

    cls.clear_session = clear_session
