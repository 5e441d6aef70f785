"""Hand-written mutants of the LangGraph stores for ARIB-LGSTORE-003 (mixed batches racing on
one store object), ARIB-LGSTORE-007 and -008 (a store's life through from_conn_string). Our own code
installed over a method, never SDK code."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

from arib.mutants.base import handwritten, load_class
from arib.targets.langgraph.stores import ASYNC_SQLITE_STORE_MODULE, REFERENCE_STORE_MODULE


@handwritten(target="lg-store-reference", module=REFERENCE_STORE_MODULE,
             qualname="ReferenceStore.batch",
             defect="batch takes a lock made for the call, not the instance's: two threads' "
                    "batches run at once on the one connection")
def lg_store_reference_lock_per_call() -> None:
    cls = load_class(REFERENCE_STORE_MODULE, "ReferenceStore")
    original = cls.batch

    def batch(self: Any, ops: Any) -> list[Any]:
        shared = self._lock
        self._lock = threading.Lock()  # the original takes this call's own lock
        try:
            return original(self, ops)
        finally:
            self._lock = shared

    cls.batch = batch


@handwritten(target="lg-store-async-sqlite-file", module=ASYNC_SQLITE_STORE_MODULE,
             qualname="AsyncSqliteStore._cursor",
             defect="the cursor's transaction takes a lock made for the call, not the "
                    "store's: two abatch calls open transactions at once on the one connection")
def lg_async_sqlite_store_lock_per_call() -> None:
    cls = load_class(ASYNC_SQLITE_STORE_MODULE, "AsyncSqliteStore")

    @asynccontextmanager
    async def _cursor(self: Any, *, transaction: bool = True) -> AsyncIterator[Any]:
        if not self.is_setup:
            await self.setup()
        async with asyncio.Lock():
            if transaction:
                await self.conn.execute("BEGIN")
            async with self.conn.cursor() as cur:
                try:
                    yield cur
                finally:
                    if transaction:
                        await self.conn.execute("COMMIT")

    cls._cursor = _cursor


@handwritten(target="lg-store-reference", module=REFERENCE_STORE_MODULE,
             qualname="ReferenceStore.from_conn_string",
             defect="leaving from_conn_string's context keeps the store's connection open")
def lg_store_reference_context_leaves_open() -> None:
    cls = load_class(REFERENCE_STORE_MODULE, "ReferenceStore")

    @contextmanager
    def from_conn_string(klass: Any, conn_string: str, **options: Any) -> Iterator[Any]:
        yield klass(conn_string, **options)

    cls.from_conn_string = classmethod(from_conn_string)


@handwritten(target="lg-store-async-sqlite-file", module=ASYNC_SQLITE_STORE_MODULE,
             qualname="AsyncSqliteStore.__aexit__",
             defect="leaving the store's context leaves its TTL sweeper running")
def lg_async_sqlite_store_exit_keeps_sweeper() -> None:
    cls = load_class(ASYNC_SQLITE_STORE_MODULE, "AsyncSqliteStore")

    async def __aexit__(self: Any, *exc: Any) -> None:
        return None

    cls.__aexit__ = __aexit__


@handwritten(target="lg-store-reference", module=REFERENCE_STORE_MODULE,
             qualname="ReferenceStore.setup",
             defect="setup() run again on a store in use recreates its items table empty (a "
                    "migration that is not idempotent)")
def lg_store_reference_setup_resets() -> None:
    import importlib

    module = importlib.import_module(REFERENCE_STORE_MODULE)
    cls = module.ReferenceStore

    def setup(self: Any) -> None:
        with self._lock:
            self._conn.executescript("DROP TABLE IF EXISTS ref_items;")
            module.make_store_tables(self._conn)

    cls.setup = setup


@handwritten(target="lg-store-async-sqlite-file", module=ASYNC_SQLITE_STORE_MODULE,
             qualname="AsyncSqliteStore.setup",
             defect="setup() takes a lock of its own call, not the store's: tasks calling it at "
                    "once all run the migrations")
def lg_async_sqlite_store_setup_unlocked() -> None:
    cls = load_class(ASYNC_SQLITE_STORE_MODULE, "AsyncSqliteStore")
    original = cls.setup

    async def setup(self: Any) -> None:
        shared = self.lock
        self.lock = asyncio.Lock()  # the original takes this call's own lock
        try:
            await original(self)
        finally:
            self.lock = shared

    cls.setup = setup
