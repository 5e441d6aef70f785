"""Hand-written mutants for ARIB-MULTI-001: defects that only several instances can see."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from typing import Any

import anyio

from arib.mutants.base import handwritten, load_class

REF = "arib.targets.openai_agents.reference"
SQLITE = "agents.memory.sqlite_session"
ASYNC_SQLITE = "agents.extensions.memory.async_sqlite_session"


@handwritten(
    target="reference",
    module=REF,
    qualname="ReferenceSession.add_items",
    defect="instance-local sequence: each instance numbers its appends from the tail it saw "
    "at its first write and stores them with INSERT OR REPLACE, so instances on one store "
    "overwrite each other's rows",
)
def reference_instance_local_sequence() -> None:
    cls = load_class(REF, "ReferenceSession")

    async def add_items(self: Any, items: list[Any]) -> None:
        async with self._lock:
            conn = self._live()
            if "_arib_next" not in self.__dict__:
                (self._arib_next,) = conn.execute(
                    "SELECT COALESCE(MAX(seq), 0) FROM items").fetchone()
            rows = []
            for item in items:
                self._arib_next += 1
                rows.append((self._arib_next, self.session_id, self._key(item), json.dumps(item)))

            def write(c: sqlite3.Connection) -> None:
                c.executemany("INSERT OR REPLACE INTO items (seq, session_id, item_key, body) "
                              "VALUES (?, ?, ?, ?)", rows)

            await self._transact(write, write=True)

    cls.add_items = add_items


@handwritten(
    target="reference",
    module=REF,
    qualname="ReferenceSession._transact",
    defect="write transaction held across an await with no busy wait: the write lock is "
    "taken, the task yields, and another instance that writes meanwhile fails with "
    "'database is locked'",
)
def reference_txn_across_await_no_wait() -> None:
    cls = load_class(REF, "ReferenceSession")

    async def _transact(self: Any, work: Any, write: bool) -> Any:
        conn = self._live()
        conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")
        try:
            await anyio.sleep(0)
            result = work(conn)
            conn.commit()
        except BaseException:
            conn.rollback()
            raise
        return result

    cls._transact = _transact


@handwritten(
    target="sqlite-file",
    module=SQLITE,
    qualname="SQLiteSession.add_items",
    defect="instance-local row ids: each instance numbers its rows from the largest id it saw "
    "at its first write and stores them with INSERT OR REPLACE, so instances on one file "
    "overwrite each other's messages",
)
def sqlite_instance_local_ids() -> None:
    cls = load_class(SQLITE, "SQLiteSession")

    async def add_items(self: Any, items: list[Any]) -> None:
        def write() -> None:
            with self._locked_connection() as conn:
                if "_arib_next" not in self.__dict__:
                    (self._arib_next,) = conn.execute(
                        f"SELECT COALESCE(MAX(id), 0) FROM {self.messages_table}").fetchone()
                for item in items:
                    self._arib_next += 1
                    conn.execute(
                        f"INSERT OR REPLACE INTO {self.messages_table} "
                        "(id, session_id, message_data) VALUES (?, ?, ?)",
                        (self._arib_next, self.session_id, json.dumps(item)),
                    )
                conn.commit()

        await asyncio.to_thread(write)

    cls.add_items = add_items


@handwritten(
    target="async-sqlite-file",
    module=ASYNC_SQLITE,
    qualname="AsyncSQLiteSession._get_connection",
    defect="no busy timeout: the connection fails at once when another connection holds the "
    "write lock, so an append that meets another instance's transaction raises "
    "'database is locked'",
)
def async_sqlite_no_busy_timeout() -> None:
    cls = load_class(ASYNC_SQLITE, "AsyncSQLiteSession")
    original = cls._get_connection

    async def _get_connection(self: Any) -> Any:
        conn = await original(self)
        if self.__dict__.get("_arib_no_wait") is not conn:
            await conn.execute("PRAGMA busy_timeout = 0")
            self._arib_no_wait = conn
        return conn

    cls._get_connection = _get_connection
