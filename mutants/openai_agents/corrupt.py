"""Hand-written mutants about rows a session cannot decode (paired with ARIB-CORRUPT-001)."""

from __future__ import annotations

import json
from typing import Any

from arib.mutants.base import handwritten, load_class
from arib.mutants.openai_agents.pop import claim_tail

REF = "arib.targets.openai_agents.reference"
SQLITE = "agents.memory.sqlite_session"
ASYNC_SQLITE = "agents.extensions.memory.async_sqlite_session"


@handwritten(
    target="reference",
    module=REF,
    qualname="ReferenceSession.get_items",
    defect="one bad row breaks the history: every stored row is decoded, so a row another "
    "writer left undecodable makes every read raise",
)
def reference_decodes_every_row() -> None:
    cls = load_class(REF, "ReferenceSession")

    async def get_items(self: Any, limit: int | None = None) -> list[Any]:
        async with self._lock:
            rows = self._live().execute(
                "SELECT body FROM items WHERE session_id = ? ORDER BY seq ASC",
                (self.session_id,),
            ).fetchall()
        items = [json.loads(body) for (body,) in rows]
        if limit is None or limit < 0:
            return items
        return items[max(len(items) - limit, 0):] if limit > 0 else []

    cls.get_items = get_items


@handwritten(
    target="sqlite-file",
    module=SQLITE,
    qualname="SQLiteSession.get_items",
    defect="a limit that counts bad rows: get_items(limit=k) takes the newest k rows and drops "
    "the undecodable ones, so it returns fewer than k items while older ones exist",
)
def sqlite_limit_counts_undecodable_rows() -> None:
    import asyncio

    cls = load_class(SQLITE, "SQLiteSession")
    original = cls.get_items

    async def get_items(self: Any, limit: int | None = None) -> list[Any]:
        if limit is None or limit <= 0:
            return list(await original(self, limit))

        def read() -> list[Any]:
            with self._locked_connection() as conn:
                rows = conn.execute(
                    f"SELECT message_data FROM {self.messages_table} WHERE session_id = ? "
                    "ORDER BY id DESC LIMIT ?", (self.session_id, limit)).fetchall()
            items = []
            for (data,) in reversed(rows):
                try:
                    items.append(json.loads(data))
                except ValueError:
                    continue
            return items

        return await asyncio.to_thread(read)

    cls.get_items = get_items


@handwritten(
    target="async-sqlite-file",
    module=ASYNC_SQLITE,
    qualname="AsyncSQLiteSession.pop_item",
    defect="a pop that gives up at a bad row: it removes the newest row and, when that row "
    "does not decode, answers None although older items are stored",
)
def async_sqlite_pop_gives_up_at_undecodable_row() -> None:
    cls = load_class(ASYNC_SQLITE, "AsyncSQLiteSession")

    async def pop_item(self: Any) -> Any:
        async with self._write_connection() as conn:
            row = await claim_tail(self, conn)
            await conn.commit()
        if row is None:
            return None
        try:
            return json.loads(row[0])
        except ValueError:
            return None

    cls.pop_item = pop_item
