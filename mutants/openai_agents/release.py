"""Hand-written mutants: sessions that keep their store's files, or lose their caller's
cancellation, when a call or close() is cancelled or an open fails (ARIB-RELEASE-001)."""

from __future__ import annotations

import asyncio
import sqlite3
from typing import Any

from arib.mutants.base import handwritten, load_class

REF = "arib.targets.openai_agents.reference"
ASYNC_SQLITE = "agents.extensions.memory.async_sqlite_session"

# Connections a mutant drops without closing: kept referenced, or CPython would close them.
_ABANDONED: list[Any] = []


@handwritten(
    target="reference",
    module=REF,
    qualname="ReferenceSession.close",
    defect="a cancelled close() swallows the cancellation and returns: the caller's timeout "
    "never fires",
)
def reference_close_swallows_cancel() -> None:
    cls = load_class(REF, "ReferenceSession")
    original = cls.close

    async def close(self: Any) -> None:
        try:
            await original(self)
        except asyncio.CancelledError:
            return

    cls.close = close


@handwritten(
    target="reference",
    module=REF,
    qualname="ReferenceSession.close",
    defect="close() marks the session closed but never closes its connection: the store's "
    "file stays open",
)
def reference_close_keeps_connection() -> None:
    cls = load_class(REF, "ReferenceSession")

    async def close(self: Any) -> None:
        if self._conn is not None:
            _ABANDONED.append(self._conn)
        self._closed = True
        self._conn = None

    cls.close = close


@handwritten(
    target="reference",
    module=REF,
    qualname="ReferenceSession.get_items",
    defect="a cancelled read reconnects and abandons its old connection unclosed: a file "
    "descriptor leaks per cancelled call",
)
def reference_cancelled_read_leaks() -> None:
    cls = load_class(REF, "ReferenceSession")
    original = cls.get_items

    async def get_items(self: Any, limit: int | None = None) -> list[Any]:
        try:
            return await original(self, limit)
        except asyncio.CancelledError:
            _ABANDONED.append(self._conn)
            self._conn = sqlite3.connect(self.db_path, check_same_thread=False)
            raise

    cls.get_items = get_items


@handwritten(
    target="reference",
    module=REF,
    qualname="ReferenceSession.get_items",
    defect="a cancelled read leaves the session unusable: it drops its connection, and every "
    "later call is refused as closed",
)
def reference_cancelled_read_poisons() -> None:
    cls = load_class(REF, "ReferenceSession")
    original = cls.get_items

    async def get_items(self: Any, limit: int | None = None) -> list[Any]:
        try:
            return await original(self, limit)
        except asyncio.CancelledError:
            conn, self._conn = self._conn, None
            if conn is not None:
                conn.close()
            raise

    cls.get_items = get_items


@handwritten(
    target="reference",
    module=REF,
    qualname="ReferenceSession.__init__",
    defect="a store that cannot be opened is reported as a RuntimeError of the session's own "
    "code, hiding the driver's error a caller's retry policy looks for",
)
def reference_open_error_masked() -> None:
    cls = load_class(REF, "ReferenceSession")
    original = cls.__init__

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        try:
            original(self, *args, **kwargs)
        except sqlite3.Error as exc:
            raise RuntimeError(f"session could not start: {exc}") from None

    cls.__init__ = __init__


@handwritten(
    target="async-sqlite-file",
    module=ASYNC_SQLITE,
    qualname="AsyncSQLiteSession.close",
    defect="close() forgets its connection without closing it when the caller is cancelled: "
    "the aiosqlite thread and the file stay open",
)
def async_sqlite_cancelled_close_abandons() -> None:
    cls = load_class(ASYNC_SQLITE, "AsyncSQLiteSession")
    original = cls.close

    async def close(self: Any) -> None:
        try:
            await asyncio.sleep(0)
        except asyncio.CancelledError:
            self._closed = True
            _ABANDONED.append(self._connection)
            self._connection = None
            raise
        await original(self)

    cls.close = close
