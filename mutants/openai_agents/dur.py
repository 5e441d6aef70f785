"""Hand-written mutants for ARIB-DUR-001: acknowledged appends that a killed writer loses."""

from __future__ import annotations

import json
from typing import Any

from arib.mutants.base import handwritten, load_class

REF = "arib.targets.openai_agents.reference"
SQLITE = "agents.memory.sqlite_session"
INSERT = "INSERT OR IGNORE INTO items (session_id, item_key, body) VALUES (?, ?, ?)"


@handwritten(
    target="reference",
    module=REF,
    qualname="ReferenceSession.add_items",
    defect="deferred commit: appends are written into one long transaction that is committed "
    "only on close(), so a writer that dies loses every append it acknowledged",
)
def reference_commit_on_close() -> None:
    cls = load_class(REF, "ReferenceSession")
    original_close = cls.close

    async def add_items(self: Any, items: list[Any]) -> None:
        async with self._lock:
            conn = self._live()
            if not conn.in_transaction:
                conn.execute("BEGIN IMMEDIATE")
            conn.executemany(INSERT, [(self.session_id, self._key(item), json.dumps(item))
                                      for item in items])

    async def close(self: Any) -> None:
        if self._conn is not None and self._conn.in_transaction:
            self._conn.commit()
        await original_close(self)

    cls.add_items = add_items
    cls.close = close


@handwritten(
    target="reference",
    module=REF,
    qualname="ReferenceSession.add_items",
    defect="torn tail: an append stores each item with the first half of its content and "
    "writes the rest only when the next append arrives, so the newest items are half-written",
)
def reference_torn_tail() -> None:
    cls = load_class(REF, "ReferenceSession")

    async def add_items(self: Any, items: list[Any]) -> None:
        bodies = [json.dumps(item) for item in items]
        # Still JSON, so a reader that skips undecodable rows shows the half-written item.
        halves = [json.dumps({**item, "content": item["content"][: len(item["content"]) // 2]})
                  if isinstance(item.get("content"), str) else body[: len(body) // 2]
                  for item, body in zip(items, bodies, strict=True)]

        def write(conn: Any) -> None:
            conn.executemany("UPDATE items SET body = ? WHERE seq = ?",
                             self.__dict__.pop("_arib_pending", []))
            pending = []
            for item, body, half in zip(items, bodies, halves, strict=True):
                seq = conn.execute(INSERT, (self.session_id, self._key(item),
                                            half)).lastrowid
                pending.append((body, seq))
            self._arib_pending = pending

        async with self._lock:
            await self._transact(write, write=True)

    cls.add_items = add_items


@handwritten(
    target="sqlite-file",
    module=SQLITE,
    qualname="SQLiteSession.add_items",
    defect="write-behind buffer: add_items() acknowledges items kept in memory and writes "
    "them only on close(), so a writer that dies loses every append it acknowledged",
)
def sqlite_write_behind_buffer() -> None:
    cls = load_class(SQLITE, "SQLiteSession")
    original_close = cls.close

    async def add_items(self: Any, items: list[Any]) -> None:
        self.__dict__.setdefault("_arib_buffer", []).extend(items)

    def close(self: Any) -> None:
        buffered = self.__dict__.pop("_arib_buffer", [])
        if buffered and not self._closed:
            with self._locked_connection() as conn:
                conn.executemany(
                    f"INSERT INTO {self.messages_table} (session_id, message_data) "
                    "VALUES (?, ?)",
                    [(self.session_id, json.dumps(item)) for item in buffered],
                )
                conn.commit()
        original_close(self)

    cls.add_items = add_items
    cls.close = close
