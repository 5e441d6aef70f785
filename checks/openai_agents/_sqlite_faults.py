"""SQLite faults at the driver boundary, for the files of one trial's store.

``SqliteWatch(root)`` replaces ``sqlite3.connect`` for as long as it is entered: a connection to
a file under ``root`` is opened with a connection class of our own (``factory=``), which counts
the statements run through it (``execute``, ``executemany``, ``commit``; through its cursors
too) and, once armed, raises ``sqlite3.OperationalError("database is locked")`` from the k-th
statement: exactly what SQLite raises when another connection or process keeps the database
locked past the busy timeout, or when a WAL snapshot cannot be upgraded to a write. Armed with
``rollback_fails``, the rollback that follows raises ``sqlite3.OperationalError("disk I/O
error")`` (SQLite's SQLITE_IOERR, e.g. a journal that cannot be read back) and rolls nothing
back, so the connection keeps the failed transaction until it is closed. Every backend of the
SQLite family (sqlite3, aiosqlite, SQLAlchemy over aiosqlite) opens its connections through
``sqlite3.connect``, so the same fault lands in each. Nothing is written into any package; the
original ``connect`` is restored on exit.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

LOCKED = "database is locked"
ROLLBACK_FAILED = "disk I/O error"


@dataclass
class Arming:
    """One armed fault: fire on the k-th statement, ``repeats`` times (the count restarts
    after each firing), the rollback after each firing failing or not."""

    k: int
    repeats: int = 1
    rollback_fails: bool = False
    seen: int = 0
    fired: int = 0
    rollbacks_failed: int = 0
    pending_rollback_failure: bool = False


@dataclass
class SqliteWatch:
    """Wraps every sqlite3 connection to a file under ``root`` while entered (see module)."""

    root: Path
    opened: list[str] = field(default_factory=list)
    statements: int = 0
    _arming: Arming | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _original: Callable[..., Any] | None = None
    _depth: threading.local = field(default_factory=threading.local)

    def arm(self, k: int, repeats: int = 1, rollback_fails: bool = False) -> None:
        """From now on, the k-th statement raises "database is locked" (see Arming)."""
        with self._lock:
            self._arming = Arming(k, repeats, rollback_fails)

    def disarm(self) -> Arming | None:
        """Stop firing; what the armed fault did (None when nothing was armed)."""
        with self._lock:
            arming, self._arming = self._arming, None
        return arming

    def lock_holder(self) -> str | None:
        """The store file whose write lock some connection holds right now, or None: a raw
        connection of our own (not wrapped, no busy wait) tries ``BEGIN IMMEDIATE`` on each
        file the backend opened, and gives the lock back at once."""
        connect = self._original or sqlite3.connect
        for path in dict.fromkeys(self.opened):
            conn = connect(path, timeout=0, isolation_level=None)
            try:
                conn.execute("BEGIN IMMEDIATE")
                conn.execute("ROLLBACK")
            except sqlite3.OperationalError as exc:
                if "locked" in str(exc).lower() or "busy" in str(exc).lower():
                    return path
                raise
            finally:
                conn.close()
        return None

    # -- called by the wrapped connections and cursors, from any thread

    def statement(self) -> None:
        """Count one statement; raise the armed fault when it is due."""
        with self._lock:
            self.statements += 1
            arming = self._arming
            if arming is None or arming.fired >= arming.repeats:
                return
            arming.seen += 1
            if arming.seen < arming.k:
                return
            arming.seen = 0
            arming.fired += 1
            arming.pending_rollback_failure = arming.rollback_fails
        raise sqlite3.OperationalError(LOCKED)

    def rollback(self) -> bool:
        """True when this rollback must fail (the one right after a firing)."""
        with self._lock:
            arming = self._arming
            if arming is None or not arming.pending_rollback_failure:
                return False
            arming.pending_rollback_failure = False
            arming.rollbacks_failed += 1
            return True

    def _outermost(self) -> bool:
        """False inside a statement this thread is already counting (Python 3.10 runs
        ``Connection.execute`` through its own ``cursor().execute``)."""
        return not getattr(self._depth, "n", 0)

    def counted(self, call: Callable[[], Any]) -> Any:
        """Run ``call`` as one statement (counted once, possibly faulted)."""
        if self._outermost():
            self.statement()
        self._depth.n = getattr(self._depth, "n", 0) + 1
        try:
            return call()
        finally:
            self._depth.n -= 1

    # -- the patch

    def _under_root(self, database: Any) -> bool:
        name = str(database)
        if name in ("", ":memory:") or name.startswith("file:"):
            return False  # an in-memory database, or a URI: never a file of the store
        try:
            return Path(str(database)).resolve().is_relative_to(self.root.resolve())
        except (OSError, ValueError):
            return False

    def __enter__(self) -> SqliteWatch:
        original = self._original = sqlite3.connect
        connection_class = _connection_class(self)

        def connect(database: Any, *args: Any, **kwargs: Any) -> Any:
            if self._under_root(database) and "factory" not in kwargs and len(args) < 5:
                self.opened.append(str(database))
                kwargs["factory"] = connection_class
            return original(database, *args, **kwargs)

        sqlite3.connect = connect  # type: ignore[assignment]
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self._original is not None:
            sqlite3.connect = self._original  # type: ignore[assignment]
            self._original = None


def _connection_class(watch: SqliteWatch) -> type[sqlite3.Connection]:
    """A sqlite3.Connection subclass whose statements go through ``watch``."""

    class WatchedCursor(sqlite3.Cursor):
        def execute(self, *args: Any, **kwargs: Any) -> Any:
            return watch.counted(lambda: super(WatchedCursor, self).execute(*args, **kwargs))

        def executemany(self, *args: Any, **kwargs: Any) -> Any:
            return watch.counted(
                lambda: super(WatchedCursor, self).executemany(*args, **kwargs))

    class WatchedConnection(sqlite3.Connection):
        def cursor(self, factory: Any = WatchedCursor) -> Any:  # type: ignore[override]
            return super().cursor(factory)

        def execute(self, *args: Any, **kwargs: Any) -> Any:
            return watch.counted(lambda: super(WatchedConnection, self).execute(*args, **kwargs))

        def executemany(self, *args: Any, **kwargs: Any) -> Any:
            return watch.counted(
                lambda: super(WatchedConnection, self).executemany(*args, **kwargs))

        def commit(self) -> None:
            watch.counted(lambda: super(WatchedConnection, self).commit())

        def rollback(self) -> None:
            if watch.rollback():
                raise sqlite3.OperationalError(ROLLBACK_FAILED)
            super().rollback()

    return WatchedConnection
