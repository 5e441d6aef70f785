"""The reference backend: a small session store that keeps every invariant the bench checks.

Idempotency rule (documented, and what ARIB-REPLAY-001 holds it to): an item that carries a
string ``id`` (as every model output item does: messages, function calls, reasoning) is
stored at most once per session; redelivering it is a no-op. An item without an ``id`` (user
input, tool outputs keyed only by ``call_id``) is appended every time, because two equal user
messages are two messages. Content equality never merges items.

Every operation runs under one anyio lock on one event loop with synchronous sqlite3 calls, so
each call is atomic; writes commit before they return; a closed session refuses every
operation loudly with ``SessionClosedError``; ``close()`` is async and idempotent.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import anyio

from targets.base import BuildContext, Claims, Handle, TargetSpec


class SessionClosedError(RuntimeError):
    """Raised by every operation on a closed ReferenceSession."""


class ReferenceSession:
    """A session that keeps every invariant of the bench; see the module docstring."""

    def __init__(self, session_id: str, db_path: str | Path) -> None:
        self.session_id = session_id
        self.session_settings = None
        self.db_path = str(db_path)
        self._lock = anyio.Lock()
        self._closed = False
        self._conn: sqlite3.Connection | None = sqlite3.connect(self.db_path)
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute(
            "CREATE TABLE IF NOT EXISTS items (seq INTEGER PRIMARY KEY AUTOINCREMENT, "
            "session_id TEXT NOT NULL, item_key TEXT, body TEXT NOT NULL, "
            "UNIQUE (session_id, item_key))"
        )
        self._conn.commit()

    def _live(self) -> sqlite3.Connection:
        if self._closed or self._conn is None:
            raise SessionClosedError(f"session {self.session_id!r} is closed")
        return self._conn

    @staticmethod
    def _key(item: Any) -> str | None:
        key = item.get("id") if isinstance(item, dict) else None
        return key if isinstance(key, str) and key else None

    async def get_items(self, limit: int | None = None) -> list[Any]:
        """The latest ``limit`` items (all when None), oldest first."""
        async with self._lock:
            conn = self._live()
            if limit is None:
                rows = conn.execute(
                    "SELECT body FROM items WHERE session_id = ? ORDER BY seq ASC",
                    (self.session_id,),
                ).fetchall()
            else:
                rows = conn.execute(
                    "SELECT body FROM items WHERE session_id = ? ORDER BY seq DESC LIMIT ?",
                    (self.session_id, max(limit, 0)),
                ).fetchall()[::-1]
            return [json.loads(body) for (body,) in rows]

    async def add_items(self, items: list[Any]) -> None:
        """Append items atomically; an item whose ``id`` is already stored is skipped."""
        async with self._lock:
            conn = self._live()
            with conn:
                for item in items:
                    conn.execute(
                        "INSERT OR IGNORE INTO items (session_id, item_key, body) VALUES (?, ?, ?)",
                        (self.session_id, self._key(item), json.dumps(item)),
                    )

    async def pop_item(self) -> Any | None:
        """Remove and return the newest item, or None when empty."""
        async with self._lock:
            conn = self._live()
            with conn:
                row = conn.execute(
                    "SELECT seq, body FROM items WHERE session_id = ? ORDER BY seq DESC LIMIT 1",
                    (self.session_id,),
                ).fetchone()
                if row is None:
                    return None
                conn.execute("DELETE FROM items WHERE seq = ?", (row[0],))
            return json.loads(row[1])

    async def clear_session(self) -> None:
        """Remove every item of this session."""
        async with self._lock:
            conn = self._live()
            with conn:
                conn.execute("DELETE FROM items WHERE session_id = ?", (self.session_id,))

    async def close(self) -> None:
        """Close once; later and concurrent calls return quietly."""
        async with self._lock:
            if self._closed:
                return
            self._closed = True
            conn, self._conn = self._conn, None
            if conn is not None:
                conn.close()


async def _build(ctx: BuildContext) -> Handle:
    from targets import reference  # looked up now: a mutant may have replaced the class

    session = reference.ReferenceSession(ctx.session_id, ctx.root / "reference.db")

    async def reopen() -> Handle:
        return await _build(ctx)

    async def dispose() -> None:
        close = getattr(session, "close", None)
        if close is not None:
            try:
                await close()
            except Exception:  # noqa: BLE001 - disposal after the trial is not evidence
                pass

    return Handle(session=session, reopen=reopen, dispose=dispose)


REFERENCE = TargetSpec(
    name="reference",
    backend="ReferenceSession",
    module="targets.reference",
    claims=Claims(has_close=True, close_is_async=True),
    build=_build,
    description="the bench's own reference store: keeps every invariant (see targets.reference)",
    reference=True,
)
