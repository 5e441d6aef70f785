"""The LangGraph store lanes' builders: ``InMemoryStore``, ``SqliteStore``/``AsyncSqliteStore``
on a file, ``PostgresStore``/``AsyncPostgresStore`` on the harness's PostgreSQL.

``Handle.session`` is the store. Every trial's store is its own (a SQLite file under the trial's
root, or a schema: see ``arib.targets.langgraph.services``), ``setup()`` is the store's own, and
``reopen()`` opens another store object on it. Facts verified in langgraph-checkpoint 4.3.2 and
-sqlite 3.1.2: ``SqliteStore.from_conn_string`` opens its sqlite3 connection with
``check_same_thread=False, isolation_level=None`` and ``AsyncSqliteStore.from_conn_string`` its
aiosqlite one with ``isolation_level=None``, as the builders here do; no store has a
``close()``.

Constructor options (``TargetSpec.options``, ``TrialContext.open_configured``): ``ttl``, the
``TTLConfig`` every store but ``InMemoryStore`` takes (its ``supports_ttl`` is False), and
``index``, the ``IndexConfig`` of semantic search, on InMemoryStore, our reference and the SQLite
stores; never on the PostgreSQL stores, whose index needs the pgvector extension, which the
harness's PostgreSQL 15 does not have.

The SQLite stores' index loads the sqlite-vec extension through the connection's
``enable_load_extension``, which only a sqlite3 module built with loadable extensions has; the
pyenv interpreters the family runs on here are built without it. So the SQLite store lanes open
their connections with ``SQLITE_DRIVER``: the interpreter's own ``sqlite3`` where its connections
load extensions, else pysqlite3 (``pysqlite3-binary``: the same DB-API module on its own SQLite
build, with loadable extensions; in the family's lock where wheels exist), else ``sqlite3``
without an index (a check that needs one is then not measured there, saying why:
``NO_INDEX``). ``AsyncSqliteStore``'s aiosqlite connection is made by ``aiosqlite.Connection``
with a connector that opens the driver's connection (what ``aiosqlite.connect`` does with
``sqlite3``); the builder verifies on the object that the connection loads extensions.
"""


from __future__ import annotations

import contextlib
import importlib
import inspect
import sqlite3
from collections.abc import Mapping
from types import ModuleType
from typing import Any

from arib.targets.base import BuildContext, Handle, NotApplicable
from arib.targets.langgraph.services import (
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


REFERENCE_STORE_MODULE = "arib.targets.langgraph.reference_store"

TTL_OPTION = {"ttl": "langgraph.store.base.TTLConfig: refresh_on_read, default_ttl, "
                     "sweep_interval_minutes (the constructor's ttl= of SqliteStore, "
                     "AsyncSqliteStore, PostgresStore, AsyncPostgresStore and our reference)"}

INDEX_OPTION = {"index": "langgraph.store.base.IndexConfig: dims, embed, fields (the "
                         "constructor's index= of InMemoryStore, our reference and the SQLite "
                         "stores)"}


def _sqlite_driver() -> tuple[ModuleType, str | None]:
    """(the DB-API module the SQLite store lanes connect with, why it cannot load extensions
    or None): sqlite3 where its connections load extensions, else pysqlite3's dbapi2."""
    if hasattr(sqlite3.Connection, "enable_load_extension"):
        return sqlite3, None
    try:
        driver = importlib.import_module("pysqlite3.dbapi2")
    except ImportError:
        return sqlite3, (
            f"this interpreter's sqlite3 (SQLite {sqlite3.sqlite_version}) is built without "
            f"loadable extensions (sqlite3.Connection has no enable_load_extension), which the "
            f"SQLite stores' index needs to load sqlite-vec, and pysqlite3 (pysqlite3-binary, "
            f"in the family's lock on Linux x86_64) is not installed; fix: install the "
            f"family's lock (nox -s langgraph), or run on a Python whose sqlite3 loads "
            f"extensions")
    if not hasattr(driver.Connection, "enable_load_extension"):
        return sqlite3, (f"neither this interpreter's sqlite3 nor pysqlite3 (SQLite "
                         f"{driver.sqlite_version}) is built with loadable extensions, which "
                         f"the SQLite stores' index needs to load sqlite-vec")
    return driver, None


SQLITE_DRIVER, NO_INDEX = _sqlite_driver()
# What a lane description says of its connections: which module, which SQLite.
DRIVER_NOTE = (f"{SQLITE_DRIVER.__name__.split('.')[0]}, SQLite {SQLITE_DRIVER.sqlite_version}"
               + ("" if NO_INDEX is None else "; no semantic index: it loads no extensions"))


def _no_index(options: Mapping[str, Any]) -> None:
    """NotApplicable (not measured here, with the cause) for an ``index`` option where no
    driver loads sqlite-vec."""
    if options.get("index") is not None and NO_INDEX is not None:
        raise NotApplicable(f"the SQLite store's semantic index is not measured here, "
                            f"because {NO_INDEX}")


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
    """SqliteStore on a ``SQLITE_DRIVER`` connection to the trial's file."""
    _no_index(ctx.options)
    conn = SQLITE_DRIVER.connect(str(ctx.root / STORE_FILE), check_same_thread=False,
                                 isolation_level=None)
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
    """AsyncSqliteStore on an aiosqlite connection to the trial's file, made on a
    ``SQLITE_DRIVER`` connection."""
    _no_index(ctx.options)
    conn = await aiosqlite_connection(str(ctx.root / STORE_FILE))
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


async def aiosqlite_connection(path: str) -> Any:
    """An aiosqlite connection to ``path`` (``isolation_level=None``, as
    ``AsyncSqliteStore.from_conn_string`` opens it) on a ``SQLITE_DRIVER`` connection: plain
    ``aiosqlite.connect`` with sqlite3, else ``aiosqlite.Connection`` given a connector that
    opens the driver's connection, verified on the object to load extensions."""
    aiosqlite = importlib.import_module("aiosqlite")
    if SQLITE_DRIVER is sqlite3:
        return await aiosqlite.connect(path, isolation_level=None)
    if "connector" not in inspect.signature(aiosqlite.Connection).parameters:
        raise NotApplicable(f"aiosqlite {getattr(aiosqlite, '__version__', '?')}'s "
                            f"Connection takes no connector: it cannot be given a "
                            f"{SQLITE_DRIVER.__name__} connection")
    driver = SQLITE_DRIVER
    conn = await aiosqlite.Connection(
        lambda: driver.connect(path, isolation_level=None), 64)
    try:  # the connection aiosqlite made is the driver's: it loads extensions
        await conn.enable_load_extension(False)
    except BaseException:
        await conn.close()
        raise
    return conn
