"""Hand-written mutants that let one session reach another's items (ARIB-ISO-001)."""

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
    qualname="ReferenceSession.clear_session",
    defect="unscoped clear: clear_session deletes the items of every session in the store",
)
def reference_clear_ignores_session() -> None:
    cls = load_class(REF, "ReferenceSession")

    async def clear_session(self: Any) -> None:
        async with self._lock:
            conn = self._live()
            with conn:
                conn.execute("DELETE FROM items")

    cls.clear_session = clear_session


@handwritten(
    target="reference",
    module=REF,
    qualname="ReferenceSession.pop_item",
    defect="unscoped pop: pop_item removes and returns the newest item of the whole store, "
    "whichever session wrote it",
)
def reference_pop_ignores_session() -> None:
    cls = load_class(REF, "ReferenceSession")

    async def pop_item(self: Any) -> Any | None:
        async with self._lock:
            conn = self._live()
            with conn:
                row = conn.execute(
                    "SELECT seq, body FROM items ORDER BY seq DESC LIMIT 1").fetchone()
                if row is None:
                    return None
                conn.execute("DELETE FROM items WHERE seq = ?", (row[0],))
            return json.loads(row[1])

    cls.pop_item = pop_item


@handwritten(
    target="reference",
    module=REF,
    qualname="ReferenceSession.get_items",
    defect="prefix match on read: get_items selects rows whose session id starts with this "
    "one's, so a session sees the items of every id it is a prefix of",
)
def reference_reads_by_prefix() -> None:
    cls = load_class(REF, "ReferenceSession")

    async def get_items(self: Any, limit: int | None = None) -> list[Any]:
        async with self._lock:
            conn = self._live()
            rows = conn.execute(
                "SELECT body FROM items WHERE session_id LIKE ? || '%' ORDER BY seq ASC",
                (self.session_id,),
            ).fetchall()
        items = [json.loads(body) for (body,) in rows]
        return items if limit is None else items[len(items) - max(limit, 0):]

    cls.get_items = get_items


@handwritten(
    target="sqlite-file",
    module=SQLITE,
    qualname="SQLiteSession.clear_session",
    defect="unscoped clear: clear_session deletes the messages of every session in the file",
)
def sqlite_clear_ignores_session() -> None:
    cls = load_class(SQLITE, "SQLiteSession")

    async def clear_session(self: Any) -> None:
        def clear_sync() -> None:
            with self._locked_connection() as conn:
                conn.execute(f"DELETE FROM {self.messages_table}")
                conn.commit()

        await asyncio.to_thread(clear_sync)

    cls.clear_session = clear_session


@handwritten(
    target="async-sqlite-file",
    module=ASYNC_SQLITE,
    qualname="AsyncSQLiteSession.pop_item",
    defect="unscoped pop: pop_item removes and returns the newest message of the whole file, "
    "whichever session wrote it",
)
def async_sqlite_pop_ignores_session() -> None:
    cls = load_class(ASYNC_SQLITE, "AsyncSQLiteSession")

    async def pop_item(self: Any) -> Any | None:
        table = self.messages_table
        async with self._locked_connection() as conn:
            cursor = await conn.execute(
                f"DELETE FROM {table} WHERE id = (SELECT id FROM {table} ORDER BY id DESC "
                f"LIMIT 1) RETURNING message_data"
            )
            row = await cursor.fetchone()
            await cursor.close()
            await conn.commit()
        return None if row is None else json.loads(row[0])

    cls.pop_item = pop_item


SQLALCHEMY = "agents.extensions.memory.sqlalchemy_session"


@handwritten(
    target="sqlalchemy-sqlite-file",
    module=SQLALCHEMY,
    qualname="SQLAlchemySession._clear_session",
    defect="unscoped session record: clear_session deletes its own items but the session "
    "record of every session, so a peer's pop_item() answers None and its clear does nothing "
    "while its items are stored",
)
def sqlalchemy_clear_drops_every_session_record() -> None:
    from sqlalchemy import delete

    cls = load_class(SQLALCHEMY, "SQLAlchemySession")

    async def _clear_session(self: Any) -> None:
        async with self._session() as sess:
            async with sess.begin():
                if not await self._lock_session(sess):
                    return
                await sess.execute(
                    delete(self._messages).where(self._messages.c.session_id == self.session_id)
                )
                await sess.execute(delete(self._sessions))

    cls._clear_session = _clear_session


@handwritten(
    target="reference",
    module=REF,
    qualname="ReferenceSession.clear_session",
    defect="clear by key prefix: clear_session also deletes the sessions whose id extends this "
    "one with ':' (as a store that names keys 'X:...' and deletes 'X:*' would)",
)
def reference_clear_takes_suffixed_ids() -> None:
    cls = load_class(REF, "ReferenceSession")

    async def clear_session(self: Any) -> None:
        async with self._lock:
            conn = self._live()
            with conn:
                conn.execute("DELETE FROM items WHERE session_id = ? "
                             "OR substr(session_id, 1, ?) = ?",
                             (self.session_id, len(self.session_id) + 1, self.session_id + ":"))

    cls.clear_session = clear_session


@handwritten(
    target="redis-injected-client",
    module="agents.extensions.memory.redis_session",
    qualname="RedisSession.add_items",
    defect="over-strict append: add_items refuses when any key of the session's layout, even "
    "the counter key it never writes, holds another type, so X cannot append while a session "
    "X:counter exists",
)
def redis_append_checks_every_key_type() -> None:
    cls = load_class("agents.extensions.memory.redis_session", "RedisSession")
    original = cls.add_items

    async def add_items(self: Any, items: list[Any]) -> None:
        from redis.exceptions import ResponseError

        layout = ((self._session_key, "hash"), (self._messages_key, "list"),
                  (self._counter_key, "string"))
        for key, kind in layout:
            found = await self._redis.type(key)
            found = found.decode() if isinstance(found, bytes) else found
            if found not in ("none", kind):
                raise ResponseError(f"WRONGTYPE {key!r} must hold a {kind}, holds {found}")
        await original(self, items)

    cls.add_items = add_items
