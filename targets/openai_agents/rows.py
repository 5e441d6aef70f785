"""Rows a session did not write: how an adapter stores one its session cannot decode.

Another writer can leave rows in a session's table that the session cannot decode: a writer
cut off mid-row, an older or foreign application, a hand edit, or, for ``EncryptedSession``,
plaintext history written before encryption was enabled (its docstring: "Plaintext records and
incomplete envelopes are skipped"). The SDK's SQLite-family and SQLAlchemy backends skip rows
that are not valid JSON in reads and pops; ``RedisSession`` skips list elements that are not
JSON or not UTF-8 ("Skip corrupted messages"; "Drop corrupted messages and keep looking for a
valid item"). An adapter that can reach its store besides the session offers
``Handle.write_undecodable``, built here; ARIB-CORRUPT-001 uses it.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

import anyio.to_thread

# Text a JSON decoder rejects: a row cut off mid-write, text that was never JSON, nothing.
NOT_JSON: tuple[str, ...] = ('{"role": "user", "content": "cut off mid-wri', "not json at all", "")
# For EncryptedSession: valid JSON that is no encrypted envelope (legacy plaintext history).
PLAINTEXT: tuple[str, ...] = ('{"role": "user", "content": "plaintext from before encryption"}',)

# For RedisSession: bytes that are no UTF-8 text (a writer that stored latin-1).
NOT_UTF8: tuple[bytes, ...] = ('{"role": "user", "content": "caf\xe9"}'.encode("latin-1"),)

RowWriter = Callable[[int], Awaitable[str]]


def sqlite_row_writer(db_path: Path, table: str, columns: tuple[str, str], session_id: str,
                      kinds: Sequence[str] = NOT_JSON) -> RowWriter:
    """Store the n-th of ``kinds`` as a row of ``session_id`` through a connection of its own
    (``columns``: the session id column, the payload column); returns what it stored."""

    def insert(text: str) -> None:
        conn = sqlite3.connect(str(db_path), timeout=10)
        try:
            with conn:
                conn.execute(f"INSERT INTO {table} ({columns[0]}, {columns[1]}) VALUES (?, ?)",
                             (session_id, text))
        finally:
            conn.close()

    async def write(n: int) -> str:
        text = kinds[n % len(kinds)]
        await anyio.to_thread.run_sync(insert, text)
        return f"a row {text!r} written to {table} by another connection"

    return write


def redis_list_writer(url: str, key: str, kinds: Sequence[str | bytes] = (*NOT_JSON, *NOT_UTF8),
                      ) -> RowWriter:
    """Append the n-th of ``kinds`` to the Redis list ``key`` (a session's messages list)
    with a client of its own (RPUSH, as another writer would); returns what it stored."""

    async def write(n: int) -> str:
        import redis.asyncio as redis_asyncio  # only the Redis lanes need the driver

        element = kinds[n % len(kinds)]
        client = redis_asyncio.from_url(url)
        try:
            await client.rpush(key, element)
        finally:
            await client.aclose()
        return f"an element {element!r} pushed onto {key} by another client"

    return write
