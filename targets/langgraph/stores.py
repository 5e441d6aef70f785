"""The LangGraph store lanes' builders: ``InMemoryStore``, ``SqliteStore``/``AsyncSqliteStore``
on a file, ``PostgresStore``/``AsyncPostgresStore`` on the harness's PostgreSQL.

``Handle.session`` is the store. Every trial's store is its own (a SQLite file under the trial's
root, or a schema: see ``targets.langgraph.services``), ``setup()`` is the store's own, and
``reopen()`` opens another store object on it. Facts verified in langgraph-checkpoint 4.3.2 and
-sqlite 3.1.2: ``SqliteStore.from_conn_string`` opens its sqlite3 connection with
``check_same_thread=False, isolation_level=None`` and ``AsyncSqliteStore.from_conn_string`` its
aiosqlite one with ``isolation_level=None``, as the builders here do; no store has a
``close()``.

Constructor options (``TargetSpec.options``, ``TrialContext.open_configured``): ``ttl``, the
``TTLConfig`` every store but ``InMemoryStore`` takes (its ``supports_ttl`` is False), and
``index``, the ``IndexConfig`` of semantic search, on InMemoryStore and our reference only: the
SQLite stores' index loads the sqlite-vec extension through
``sqlite3.Connection.enable_load_extension``, which the interpreter the family runs on lacks
(its sqlite3 is built without extension loading), and the PostgreSQL stores' needs the
pgvector extension, which the harness's PostgreSQL 15 does not have.
"""


from __future__ import annotations

import importlib
import sqlite3

from targets.base import BuildContext, Handle
from targets.langgraph.services import (
    cancel_batching,
    class_in,
    file_builder,
    private_handle,
)

MEMORY_STORE_MODULE = "langgraph.store.memory"
SQLITE_STORE_MODULE = "langgraph.store.sqlite.base"
ASYNC_SQLITE_STORE_MODULE = "langgraph.store.sqlite.aio"
PG_STORE_MODULE = "langgraph.store.postgres.base"
PG_ASYNC_STORE_MODULE = "langgraph.store.postgres.aio"


REFERENCE_STORE_MODULE = "targets.langgraph.reference_store"

TTL_OPTION = {"ttl": "langgraph.store.base.TTLConfig: refresh_on_read, default_ttl, "
                     "sweep_interval_minutes (the constructor's ttl= of SqliteStore, "
                     "AsyncSqliteStore, PostgresStore, AsyncPostgresStore and our reference)"}

INDEX_OPTION = {"index": "langgraph.store.base.IndexConfig: dims, embed, fields (the "
                         "constructor's index= of InMemoryStore and our reference)"}


build_reference_store = file_builder(REFERENCE_STORE_MODULE, "ReferenceStore",
                                     "reference-store.db")


async def build_memory_store(ctx: BuildContext) -> Handle:
    """InMemoryStore: its items live in this object; no second instance reaches them."""
    store = class_in(MEMORY_STORE_MODULE, "InMemoryStore")(**ctx.options)
    return private_handle(store, f"{type(store).__name__} keeps its items in this object's "
                                 f"dictionaries")


async def build_sqlite_store(ctx: BuildContext) -> Handle:
    """SqliteStore on a sqlite3 connection to the trial's file."""
    conn = sqlite3.connect(ctx.root / "store.db", check_same_thread=False, isolation_level=None)
    try:
        store = class_in(SQLITE_STORE_MODULE, "SqliteStore")(conn, **ctx.options)
        store.setup()
    except BaseException:
        conn.close()
        raise

    async def dispose() -> None:
        if hasattr(store, "stop_ttl_sweeper"):  # started by a TTL check
            store.stop_ttl_sweeper(timeout=5.0)
        conn.close()

    return Handle(session=store, reopen=lambda: build_sqlite_store(ctx), dispose=dispose)


async def build_async_sqlite_store(ctx: BuildContext) -> Handle:
    """AsyncSqliteStore on an aiosqlite connection to the trial's file."""
    aiosqlite = importlib.import_module("aiosqlite")
    conn = await aiosqlite.connect(str(ctx.root / "store.db"), isolation_level=None)
    try:
        store = class_in(ASYNC_SQLITE_STORE_MODULE, "AsyncSqliteStore")(conn, **ctx.options)
        await store.setup()
    except BaseException:
        await conn.close()
        raise

    async def dispose() -> None:
        sweeper = getattr(store, "_ttl_sweeper_task", None)  # started by a TTL check
        if sweeper is not None:
            sweeper.cancel()
        cancel_batching(store)
        await conn.close()

    return Handle(session=store, reopen=lambda: build_async_sqlite_store(ctx), dispose=dispose)
