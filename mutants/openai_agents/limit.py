"""Hand-written get_items(limit=...) mutants (paired with ARIB-LIMIT-001): one defect each."""

from __future__ import annotations

import json
from typing import Any

import anyio

from arib.mutants.base import handwritten, load_class

REF = "arib.targets.openai_agents.reference"
SQLITE = "agents.memory.sqlite_session"
ASYNC_SQLITE = "agents.extensions.memory.async_sqlite_session"
SQLALCHEMY = "agents.extensions.memory.sqlalchemy_session"


@handwritten(
    target="reference",
    module=REF,
    qualname="ReferenceSession.get_items",
    defect="wrong end: a limited read returns the oldest k items instead of the newest k",
)
def reference_limit_returns_oldest() -> None:
    cls = load_class(REF, "ReferenceSession")
    original = cls.get_items

    async def get_items(self: Any, limit: int | None = None) -> list[Any]:
        if limit is None:
            return list(await original(self))
        async with self._lock:
            rows = self._live().execute(
                "SELECT body FROM items WHERE session_id = ? ORDER BY seq ASC LIMIT ?",
                (self.session_id, max(limit, 0)),
            ).fetchall()
        return [json.loads(body) for (body,) in rows]

    cls.get_items = get_items


@handwritten(
    target="reference",
    module=REF,
    qualname="ReferenceSession.get_items",
    defect="torn window: a limited read takes the newest position under the lock, releases "
    "it, then reads every row after position - k, so appends in between widen the window "
    "past k items",
)
def reference_limit_window_from_stale_max() -> None:
    cls = load_class(REF, "ReferenceSession")
    original = cls.get_items

    async def get_items(self: Any, limit: int | None = None) -> list[Any]:
        if limit is None:
            return list(await original(self))
        async with self._lock:
            (top,) = self._live().execute(
                "SELECT COALESCE(MAX(seq), 0) FROM items WHERE session_id = ?",
                (self.session_id,),
            ).fetchone()
        await anyio.sleep(0)
        async with self._lock:
            rows = self._live().execute(
                "SELECT body FROM items WHERE session_id = ? AND seq > ? ORDER BY seq ASC",
                (self.session_id, top - max(limit, 0)),
            ).fetchall()
        return [json.loads(body) for (body,) in rows]

    cls.get_items = get_items


@handwritten(
    target="async-sqlite-file",
    module=ASYNC_SQLITE,
    qualname="AsyncSQLiteSession.get_items",
    defect="torn window: a limited read takes the newest id under the session lock, releases "
    "it, then reads every row after id - k, so appends in between widen the window past k",
)
def async_sqlite_limit_window_from_stale_max() -> None:
    cls = load_class(ASYNC_SQLITE, "AsyncSQLiteSession")
    original = cls.get_items

    async def get_items(self: Any, limit: int | None = None) -> list[Any]:
        if limit is None:
            return list(await original(self))
        table = self.messages_table
        async with self._locked_connection() as conn:
            cursor = await conn.execute(
                f"SELECT COALESCE(MAX(id), 0) FROM {table} WHERE session_id = ?",
                (self.session_id,),
            )
            (top,) = await cursor.fetchone()
        async with self._locked_connection() as conn:
            cursor = await conn.execute(
                f"SELECT message_data FROM {table} WHERE session_id = ? AND id > ? "
                "ORDER BY id ASC",
                (self.session_id, top - max(limit, 0)),
            )
            rows = await cursor.fetchall()
        return [json.loads(data) for (data,) in rows]

    cls.get_items = get_items


@handwritten(
    target="sqlite-file",
    module=SQLITE,
    qualname="SQLiteSession.get_items",
    defect="unreversed window: a limited read returns the newest k items newest-first, "
    "forgetting to restore chronological order",
)
def sqlite_limit_newest_first() -> None:
    cls = load_class(SQLITE, "SQLiteSession")
    original = cls.get_items

    async def get_items(self: Any, limit: int | None = None) -> list[Any]:
        items = list(await original(self, limit))
        return items[::-1] if limit is not None else items

    cls.get_items = get_items


@handwritten(
    target="sqlalchemy-sqlite-file",
    module=SQLALCHEMY,
    qualname="SQLAlchemySession.get_items",
    defect="off-by-one window: a limited read returns the newest k + 1 items",
)
def sqlalchemy_limit_off_by_one() -> None:
    cls = load_class(SQLALCHEMY, "SQLAlchemySession")
    original = cls.get_items

    async def get_items(self: Any, limit: int | None = None) -> list[Any]:
        return list(await original(self, None if limit is None else limit + 1))

    cls.get_items = get_items


@handwritten(
    target="reference",
    module=REF,
    qualname="ReferenceSession.get_items",
    defect="widened window: a limited read takes the newest k rows of the whole store, so a "
    "peer session's newer items fill this session's window",
)
def reference_limit_reads_every_session() -> None:
    cls = load_class(REF, "ReferenceSession")
    original = cls.get_items

    async def get_items(self: Any, limit: int | None = None) -> list[Any]:
        if limit is None:
            return list(await original(self))
        async with self._lock:
            rows = self._live().execute(
                "SELECT body FROM items ORDER BY seq DESC LIMIT ?", (limit,)
            ).fetchall()
        return [json.loads(body) for (body,) in rows[::-1]]

    cls.get_items = get_items


@handwritten(
    target="sqlite-file",
    module=SQLITE,
    qualname="SQLiteSession.get_items",
    defect="falsy limit: get_items(limit=0) is taken as no limit (`if not limit`) and returns "
    "the whole history instead of nothing",
)
def sqlite_zero_limit_means_all() -> None:
    cls = load_class(SQLITE, "SQLiteSession")
    original = cls.get_items

    async def get_items(self: Any, limit: int | None = None) -> list[Any]:
        return list(await original(self, limit or None))

    cls.get_items = get_items


@handwritten(
    target="async-sqlite-file",
    module=ASYNC_SQLITE,
    qualname="AsyncSQLiteSession.get_items",
    defect="negative limit as a window: get_items(limit=-1) keeps `items[-limit:]` of the "
    "whole history and so drops its oldest item",
)
def async_sqlite_negative_limit_drops_oldest() -> None:
    cls = load_class(ASYNC_SQLITE, "AsyncSQLiteSession")
    original = cls.get_items

    async def get_items(self: Any, limit: int | None = None) -> list[Any]:
        items = list(await original(self, limit))
        return items[-limit:] if limit is not None and limit < 0 else items

    cls.get_items = get_items
