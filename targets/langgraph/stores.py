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
``index``, the ``IndexConfig`` of semantic search, on InMemoryStore and our reference, and on the
SQLite stores only where the interpreter's sqlite3 loads extensions (their index loads the
sqlite-vec extension through ``sqlite3.Connection.enable_load_extension``; the pyenv
interpreters the family runs on here are built without it); never on the PostgreSQL stores,
whose index needs the pgvector extension, which the harness's PostgreSQL 15 does not have.
"""


from __future__ import annotations

import contextlib
import importlib
import sqlite3

from targets.base import BuildContext, Handle, NotApplicable
from targets.langgraph.services import (
    cancel_batching,
    class_in,
    conninfo,
    ensure_schema,
    file_builder,
    private_handle,
    trial_schema,
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
                         "constructor's index= of InMemoryStore, our reference and, where the "
                         "interpreter's sqlite3 loads extensions, the SQLite stores)"}
# The SQLite stores' index loads sqlite-vec through Connection.enable_load_extension, which only
# an interpreter whose sqlite3 was built with loadable extensions has.
SQLITE_LOADS_EXTENSIONS = hasattr(sqlite3.Connection, "enable_load_extension")
SQLITE_OPTIONS = {**TTL_OPTION, **(INDEX_OPTION if SQLITE_LOADS_EXTENSIONS else {})}


REFERENCE_STORE_FILE = "reference-store.db"
STORE_FILE = "store.db"
build_reference_store = file_builder(REFERENCE_STORE_MODULE, "ReferenceStore",
                                     REFERENCE_STORE_FILE)


def conn_string(lane: str, module: str, ctx: BuildContext) -> str:
    """What ``from_conn_string`` of the lane's class takes to open the trial's store (the one
    the lane's builder opens): the SQLite file's path, or a libpq string naming the trial's
    schema (created if needed); NotApplicable for a store no string names (in memory)."""
    if module == REFERENCE_STORE_MODULE:
        return str(ctx.root / REFERENCE_STORE_FILE)
    if module in (SQLITE_STORE_MODULE, ASYNC_SQLITE_STORE_MODULE):
        return str(ctx.root / STORE_FILE)
    if module in (PG_STORE_MODULE, PG_ASYNC_STORE_MODULE):
        from psycopg.conninfo import make_conninfo

        dsn, schema = conninfo(ctx, lane), trial_schema(ctx)
        ensure_schema(dsn, schema)
        return make_conninfo(dsn, options=f"-c search_path={schema}")
    raise NotApplicable(f"lane {lane!r} ({module}) keeps its store in the object: no "
                        f"connection string opens it")


async def build_memory_store(ctx: BuildContext) -> Handle:
    """InMemoryStore: its items live in this object; no second instance reaches them."""
    store = class_in(MEMORY_STORE_MODULE, "InMemoryStore")(**ctx.options)
    return private_handle(store, f"{type(store).__name__} keeps its items in this object's "
                                 f"dictionaries")


async def build_sqlite_store(ctx: BuildContext) -> Handle:
    """SqliteStore on a sqlite3 connection to the trial's file."""
    conn = sqlite3.connect(ctx.root / STORE_FILE, check_same_thread=False, isolation_level=None)
    try:
        store = class_in(SQLITE_STORE_MODULE, "SqliteStore")(conn, **ctx.options)
        store.setup()
    except BaseException:
        conn.close()
        raise

    async def dispose() -> None:
        # a sweeper a TTL check started; a mutant's stop that fails is the check's evidence,
        # not this cleanup's
        with contextlib.suppress(Exception):
            store.stop_ttl_sweeper(timeout=5.0)
        conn.close()

    return Handle(session=store, reopen=lambda: build_sqlite_store(ctx), dispose=dispose)


async def build_async_sqlite_store(ctx: BuildContext) -> Handle:
    """AsyncSqliteStore on an aiosqlite connection to the trial's file."""
    aiosqlite = importlib.import_module("aiosqlite")
    conn = await aiosqlite.connect(str(ctx.root / STORE_FILE), isolation_level=None)
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
