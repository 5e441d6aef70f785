"""The reference backend: a small session store that keeps every invariant the bench checks.

Idempotency rule (documented, and what ARIB-REPLAY-001 holds it to): an item that carries a
string ``id`` (as every model output item does: messages, function calls, reasoning) is
stored at most once per session; redelivering it is a no-op. An item without an ``id`` (user
input, tool outputs keyed only by ``call_id``) is appended every time, because two equal user
messages are two messages. Content equality never merges items.

Every operation runs under one anyio lock on one event loop with synchronous sqlite3 calls, so
each call is atomic; writes commit before they return; a closed session refuses every
operation loudly with ``SessionClosedError``; ``close()`` is async and idempotent.

Several instances and processes on one file (ARIB-MULTI-001): every operation is one SQLite
transaction (``BEGIN IMMEDIATE`` for a write, so the write lock is taken up front and never
upgraded), run with no busy wait on the event loop; while another connection holds the lock
the transaction is retried after an async back-off, for up to ``BUSY_DEADLINE_S``, so "database
is locked" never reaches the caller under ordinary contention.

Cancellation (ARIB-CANCEL-001): no transaction spans an ``await``; a call can be cancelled only
while it waits for the lock or for a retry, when nothing of it is written. A cancelled write is
therefore wholly absent, and the caller can tell by reading; a write that returned is committed.

Rows another writer left that do not decode as JSON (ARIB-CORRUPT-001) are skipped by every
read and pop and are not counted by a limit; they stay in place.

Durability (ARIB-DUR-001): commits run with ``synchronous=FULL`` in WAL mode, so an
acknowledged write survives the death of its process (and, on a disk that honours fsync, of
the machine); a transaction cut off by a kill is never half-visible.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import anyio

from arib.targets.base import BuildContext, Claims, Handle, TargetSpec
from arib.targets.openai_agents.reference_advanced import with_branches
from arib.targets.openai_agents.reference_compaction import CompactionSnapshotMixin
from arib.targets.openai_agents.reference_options import OPTION_DOCS, UNREADABLE, StoreOptionsMixin
from arib.targets.openai_agents.reference_ping import PingMixin
from arib.targets.openai_agents.reference_tables import (
    DEFAULT_PAIR,
    TABLE_OPTION_DOCS,
    claim_tables,
)
from arib.targets.openai_agents.reference_ttl import TTL_SCHEMA, TtlMixin
from arib.targets.openai_agents.rows import sqlite_row_writer

T = TypeVar("T")

# How long an operation keeps retrying while another connection holds the database lock.
BUSY_DEADLINE_S = 10.0
# Async back-off between attempts (the last value repeats), in seconds.
BACKOFF_S = (0.0005, 0.001, 0.002, 0.005, 0.01, 0.02)


class SessionClosedError(RuntimeError):
    """Raised by every operation on a closed ReferenceSession."""


SCHEMA = ("CREATE TABLE IF NOT EXISTS items (seq INTEGER PRIMARY KEY AUTOINCREMENT, "
          "session_id TEXT NOT NULL, item_key TEXT, body TEXT NOT NULL, "
          "UNIQUE (session_id, item_key))")
UNDECODABLE = UNREADABLE  # what a read makes of a row it cannot decode (or authenticate)


def _newest(items: list[Any], limit: int | None) -> list[Any]:
    """The newest ``limit`` of ``items`` (all when None or negative, none for 0), in order."""
    if limit is None or limit < 0:
        return items
    return items[len(items) - min(limit, len(items)):]


def _is_busy(exc: BaseException) -> bool:
    """SQLITE_BUSY / SQLITE_LOCKED: another connection holds the lock; worth a retry."""
    text = str(exc).lower()
    return isinstance(exc, sqlite3.OperationalError) and ("locked" in text or "busy" in text)


def _retry_busy(conn: sqlite3.Connection, work: Callable[[], T]) -> T:
    """``work()`` (which commits), again while another connection holds the lock, for up to
    ``BUSY_DEADLINE_S``; used where the reference opens a store (a constructor: no await)."""
    deadline = time.monotonic() + BUSY_DEADLINE_S
    attempt = 0
    while True:
        try:
            return work()
        except sqlite3.OperationalError as exc:
            conn.rollback()
            if not _is_busy(exc) or time.monotonic() >= deadline:
                raise
        # Opening is synchronous (a constructor); the wait is short and bounded.
        time.sleep(BACKOFF_S[min(attempt, len(BACKOFF_S) - 1)])
        attempt += 1


def _connect(db_path: str) -> sqlite3.Connection:
    """Open the store in WAL mode with durable commits; retry a transient lock at open."""
    conn = sqlite3.connect(db_path, timeout=0)

    def init() -> sqlite3.Connection:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=FULL")
        conn.execute(SCHEMA)
        conn.execute(TTL_SCHEMA)
        conn.commit()
        return conn

    try:
        return _retry_busy(conn, init)
    except BaseException:
        conn.close()
        raise


@with_branches  # branches, usage and turns: targets/openai_agents/reference_advanced.py
class ReferenceSession(PingMixin, CompactionSnapshotMixin, StoreOptionsMixin, TtlMixin):
    """A session that keeps every invariant of the bench; see the module docstring.

    Compaction (ARIB-COMPACT-*): the snapshot protocol comes from the mixin, see
    arib.targets.openai_agents.reference_compaction. The constructor options ``encryption_key`` and
    ``max_scan_items``: see arib.targets.openai_agents.reference_options; ``ttl`` (seconds,
    ARIB-TTL-001): arib.targets.openai_agents.reference_ttl; ``create_tables``, ``sessions_table``
    and ``messages_table`` (the table pair a store belongs to, ARIB-TABLES-001):
    arib.targets.openai_agents.reference_tables.
    """

    def __init__(self, session_id: str, db_path: str | Path, ttl: float | None = None, *,
                 create_tables: bool = True, sessions_table: str = DEFAULT_PAIR[0],
                 messages_table: str = DEFAULT_PAIR[1], **options: Any) -> None:
        self._configure(**options)
        self.session_id = session_id
        self.ttl = ttl
        self.session_settings = None
        self.db_path = str(db_path)
        self._lock = anyio.Lock()
        self._closed = False
        conn = _connect(self.db_path)
        try:
            _retry_busy(conn, lambda: claim_tables(conn, self.db_path,
                                                   (sessions_table, messages_table),
                                                   create_tables))
        except BaseException:
            conn.close()
            raise
        self._conn: sqlite3.Connection | None = conn

    def _live(self) -> sqlite3.Connection:
        if self._closed or self._conn is None:
            raise SessionClosedError(f"session {self.session_id!r} is closed")
        return self._conn

    @staticmethod
    def _key(item: Any) -> str | None:
        key = item.get("id") if isinstance(item, dict) else None
        return key if isinstance(key, str) and key else None

    def _roll_back(self, conn: sqlite3.Connection) -> None:
        """Roll back; a connection that cannot is closed (which discards its transaction) and
        replaced, so no failed transaction outlives the call (ARIB-RETRY-001)."""
        try:
            conn.rollback()
        except sqlite3.Error:
            conn.close()
            self._conn = _connect(self.db_path)

    async def _transact(self, work: Callable[[sqlite3.Connection], T], write: bool) -> T:
        """Run ``work`` in one transaction, retrying while another connection holds the lock.

        Called with ``self._lock`` held. The transaction never spans an await: the only
        suspension is the back-off between attempts, when no transaction is open.
        """
        deadline = time.monotonic() + BUSY_DEADLINE_S
        attempt = 0
        while True:
            conn = self._live()
            try:
                conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")
                try:
                    self._expire_due(conn)
                    result = work(conn)
                    conn.commit()
                except BaseException:
                    self._roll_back(conn)
                    raise
                return result
            except sqlite3.OperationalError as exc:
                if not _is_busy(exc) or time.monotonic() >= deadline:
                    raise
            await anyio.sleep(BACKOFF_S[min(attempt, len(BACKOFF_S) - 1)])
            attempt += 1

    def _window(self, limit: int | None) -> int | None:
        """How many newest items a read returns: ``limit``, else the session's default.

        As in every SDK backend: ``session_settings.limit`` applies when no limit is passed,
        and a negative limit means no limit (SQLite's ``LIMIT -1``); None means all items.
        """
        return getattr(self.session_settings, "limit", None) if limit is None else limit

    async def get_items(self, limit: int | None = None) -> list[Any]:
        """The latest ``limit`` items (all when None or negative, none for 0), oldest first.

        A row that does not decode (left by another writer) is skipped and not counted.
        """
        limit = self._window(limit)
        if self.max_scan_items is not None:
            return await self._budgeted_items(limit)

        def read(conn: sqlite3.Connection) -> list[Any]:
            return conn.execute("SELECT body FROM items WHERE session_id = ? ORDER BY seq ASC",
                                (self.session_id,)).fetchall()

        async with self._lock:
            rows = await self._transact(read, write=False)
        return _newest([item for (body,) in rows if (item := self._open(body)) is not UNDECODABLE],
                       limit)

    async def add_items(self, items: list[Any]) -> None:
        """Append items atomically; an item whose ``id`` is already stored is skipped."""
        rows = [(self.session_id, self._key(item), self._seal(item)) for item in items]

        def append(conn: sqlite3.Connection) -> None:
            conn.executemany(
                "INSERT OR IGNORE INTO items (session_id, item_key, body) VALUES (?, ?, ?)", rows
            )
            self._restart_ttl(conn)

        async with self._lock:
            await self._transact(append, write=True)

    async def pop_item(self) -> Any | None:
        """Remove and return the newest item, or None when there is none (rows that do not
        decode are skipped and left in place)."""

        def pop(conn: sqlite3.Connection) -> Any | None:
            rows = conn.execute("SELECT seq, body FROM items WHERE session_id = ? "
                                "ORDER BY seq DESC", (self.session_id,)).fetchall()
            for seq, body in rows:
                item = self._open(body)
                if item is not UNDECODABLE:
                    conn.execute("DELETE FROM items WHERE seq = ?", (seq,))
                    return item
            return None

        async with self._lock:
            return await self._transact(pop, write=True)

    async def clear_session(self) -> None:
        """Remove every item of this session."""

        def clear(conn: sqlite3.Connection) -> None:
            conn.execute("DELETE FROM items WHERE session_id = ?", (self.session_id,))
            self._forget_ttl(conn)

        async with self._lock:
            await self._transact(clear, write=True)

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
    from arib.targets.openai_agents import (
        reference,  # looked up now: a mutant may have replaced the class
    )

    session = reference.ReferenceSession(ctx.session_id, ctx.root / "reference.db",
                                         **ctx.options)

    async def reopen() -> Handle:
        return await _build(ctx)

    async def dispose() -> None:
        close = getattr(session, "close", None)
        if close is not None:
            try:
                await close()
            except Exception:  # noqa: BLE001 - disposal after the trial is not evidence
                pass

    return Handle(session=session, reopen=reopen, dispose=dispose,
                  write_undecodable=sqlite_row_writer(ctx.root / "reference.db", "items",
                                                      ("session_id", "body"), ctx.session_id))


REFERENCE = TargetSpec(
    name="reference",
    backend="ReferenceSession",
    module="arib.targets.openai_agents.reference",
    claims=Claims(has_close=True, close_is_async=True, retries_lock_errors=True,
                  retry_note="arib.targets.openai_agents.reference: a transaction that "
                             "meets a lock is retried for up to BUSY_DEADLINE_S"),
    build=_build,
    description="the bench's own reference store: keeps every invariant (see "
                "targets/openai_agents/reference.py)",
    reference=True,
    waits_s=BUSY_DEADLINE_S,  # it retries a busy database for this long, then raises
    options={**OPTION_DOCS, **TABLE_OPTION_DOCS,
             "ttl": "arib.targets.openai_agents.reference_ttl: seconds until a session's "
                    "history expires, restarted by each add_items; None: never"},
)
