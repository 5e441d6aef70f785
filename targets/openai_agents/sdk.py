"""Adapters for the local openai-agents session backends (no service needed).

File lanes keep the store in one file under the trial root. The two ``:memory:`` lanes are the
configurations the parity gate runs: ``SQLiteSession(":memory:")``, whose store lives in the
one connection of one object (no second instance can open it: ``reopen()`` raises
``NotApplicable``), and ``SQLAlchemySession`` on ``sqlite+aiosqlite://`` with a ``StaticPool``
(one connection, which every instance built on the same trial root shares through the same
engine, so a reopened instance or a peer session id reads the same store). A file in the
trial root records which process owns its in-memory store: a build in any other process (a
forked worker), or after the store was disposed, raises ``NotApplicable`` rather than
quietly opening a new, empty store.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from arib.targets.base import (
    BuildContext,
    Claims,
    FixedGuard,
    Handle,
    NotApplicable,
    TargetSpec,
    quiet_close,
)
from arib.targets.openai_agents.rows import NOT_JSON, RowWriter, sqlite_row_writer

SQLITE_MODULE = "agents.memory.sqlite_session"
ASYNC_SQLITE_MODULE = "agents.extensions.memory.async_sqlite_session"
ADVANCED_SQLITE_MODULE = "agents.extensions.memory.advanced_sqlite_session"
SQLALCHEMY_MODULE = "agents.extensions.memory.sqlalchemy_session"
# What SQLAlchemy loads by URL for sqlite+aiosqlite: a TargetSpec.preload.
SQLALCHEMY_SQLITE_DRIVER = ("sqlalchemy.ext.asyncio", "sqlalchemy.pool",
                            "sqlalchemy.dialects.sqlite.aiosqlite")


def _messages_writer(ctx: BuildContext) -> RowWriter:
    """Undecodable rows in the SDK's default messages table of the trial's store file."""
    return sqlite_row_writer(ctx.root / "store.db", "agent_messages",
                             ("session_id", "message_data"), ctx.session_id)


def _file_builder(make: Callable[[BuildContext], Any], raw_rows: bool = True
                  ) -> Callable[[BuildContext], Any]:
    """A builder for a backend that keeps its store in one file under the trial root."""

    async def build(ctx: BuildContext) -> Handle:
        session = make(ctx)

        async def reopen() -> Handle:
            return await build(ctx)

        async def dispose() -> None:
            await quiet_close(session)

        return Handle(session=session, reopen=reopen, dispose=dispose,
                      write_undecodable=_messages_writer(ctx) if raw_rows else None)

    return build


def _sqlite(ctx: BuildContext) -> Any:
    from agents.memory import sqlite_session

    return sqlite_session.SQLiteSession(ctx.session_id, db_path=str(ctx.root / "store.db"))


def _async_sqlite(ctx: BuildContext) -> Any:
    from agents.extensions.memory import async_sqlite_session

    return async_sqlite_session.AsyncSQLiteSession(
        ctx.session_id, db_path=str(ctx.root / "store.db")
    )


def _advanced_sqlite(ctx: BuildContext) -> Any:
    from agents.extensions.memory import advanced_sqlite_session

    options = {"create_tables": True, **ctx.options}  # the lane's default creates the tables
    return advanced_sqlite_session.AdvancedSQLiteSession(
        session_id=ctx.session_id, db_path=str(ctx.root / "store.db"), **options
    )


ADVANCED_OPTIONS = {
    "create_tables": "AdvancedSQLiteSession: create and claim the structure tables (this "
                     "lane's default: True; the constructor's own default is False)",
    "sessions_table": "AdvancedSQLiteSession: the sessions table of the configured pair",
    "messages_table": "AdvancedSQLiteSession: the messages table of the configured pair",
}


def sqlalchemy_builder(url_for: Callable[[BuildContext], str], raw_rows: bool = False
                       ) -> Callable[[BuildContext], Any]:
    """A builder for SQLAlchemySession.from_url; the caller disposes the engine it owns.

    ``raw_rows``: the URL is the trial's ``store.db`` file, so undecodable rows can be written
    to it by another connection."""

    async def build(ctx: BuildContext) -> Handle:
        from agents.extensions.memory import sqlalchemy_session

        session = sqlalchemy_session.SQLAlchemySession.from_url(
            ctx.session_id, url=url_for(ctx), create_tables=True
        )

        async def reopen() -> Handle:
            return await build(ctx)

        async def dispose() -> None:
            engine = getattr(session, "engine", None) or getattr(session, "_engine", None)
            if engine is not None:
                with contextlib.suppress(Exception):
                    await engine.dispose()

        return Handle(session=session, reopen=reopen, dispose=dispose,
                      write_undecodable=_messages_writer(ctx) if raw_rows else None)

    return build


# The busy timeout of every SQLite connection these lanes open, in seconds. openai-agents
# 0.24.0 source: SQLiteSession (and AdvancedSQLiteSession, its subclass) calls
# sqlite3.connect(str(self.db_path), check_same_thread=False) and AsyncSQLiteSession calls
# aiosqlite.connect(str(self.db_path)), which passes its keywords on to sqlite3.connect: no
# timeout argument, so sqlite3's default of 5.0 s applies; SQLAlchemySession sets
# "PRAGMA busy_timeout = {_SQLITE_BUSY_TIMEOUT_MS}" (5000) on each SQLite connection.
# tests/test_waits.py checks the connect calls and reads PRAGMA busy_timeout.
SQLITE_BUSY_TIMEOUT_S = 5.0


# Guards of the SDK's code that a lane's construction fixes (arib.survey.guards): what they rule
# out can never run on the lane. Each is verified on a real instance before a survey counts.
MEMORY_DB = FixedGuard("self._is_memory_db", True, "db_path is ':memory:'")
FILE_DB = FixedGuard("self._is_memory_db", False, "db_path is a file")
NO_FILE_LOCK = FixedGuard("self._lock_path is not None", False,
                          "a ':memory:' instance takes no per-file lock")
SQLITE_DIALECT = (
    FixedGuard('self._engine.dialect.name != "sqlite"', False, "the engine is sqlite+aiosqlite"),
    FixedGuard('self._engine.dialect.name == "sqlite"', True, "the engine is sqlite+aiosqlite"),
    FixedGuard("self._engine.dialect.delete_returning", True,
               "SQLite 3.35+ has DELETE ... RETURNING and SQLAlchemy's dialect says so"),
)

SQLITE_FILE = TargetSpec(
    name="sqlite-file",
    backend="SQLiteSession",
    module=SQLITE_MODULE,
    claims=Claims(has_close=True, close_is_async=False),
    build=_file_builder(_sqlite),
    description="SQLiteSession on a file; work runs in asyncio.to_thread; sync close()",
    waits_s=SQLITE_BUSY_TIMEOUT_S,
    fixed_guards=(FILE_DB,),
)

ASYNC_SQLITE_FILE = TargetSpec(
    name="async-sqlite-file",
    backend="AsyncSQLiteSession",
    module=ASYNC_SQLITE_MODULE,
    claims=Claims(has_close=True, close_is_async=True),
    build=_file_builder(_async_sqlite),
    description="AsyncSQLiteSession (aiosqlite) on a file; async close()",
    waits_s=SQLITE_BUSY_TIMEOUT_S,
)

ADVANCED_SQLITE_FILE = TargetSpec(
    name="advanced-sqlite-file",
    backend="AdvancedSQLiteSession",
    module=ADVANCED_SQLITE_MODULE,
    claims=Claims(has_close=True, close_is_async=False),
    build=_file_builder(_advanced_sqlite, raw_rows=False),  # its rows span several tables
    description="AdvancedSQLiteSession(create_tables=True) on a file; sync close()",
    waits_s=SQLITE_BUSY_TIMEOUT_S,
    options=ADVANCED_OPTIONS,
)

SQLALCHEMY_RETRY_NOTE = (
    "SQLAlchemySession._run_sqlite_write_with_retry (openai-agents 0.24.0), around add_items, "
    "pop_item and clear_session on SQLite: 'Retry transient SQLite write lock failures with "
    "bounded backoff'")

SQLALCHEMY_SQLITE_FILE = TargetSpec(
    name="sqlalchemy-sqlite-file",
    backend="SQLAlchemySession",
    module=SQLALCHEMY_MODULE,
    claims=Claims(has_close=False, retries_lock_errors=True, retry_note=SQLALCHEMY_RETRY_NOTE),
    build=sqlalchemy_builder(lambda ctx: f"sqlite+aiosqlite:///{ctx.root / 'store.db'}",
                             raw_rows=True),
    description="SQLAlchemySession.from_url(sqlite+aiosqlite, file); no close(), engine disposed",
    waits_s=SQLITE_BUSY_TIMEOUT_S,
    fixed_guards=SQLITE_DIALECT,
    preload=SQLALCHEMY_SQLITE_DRIVER,
)

# ----------------------------------------------------------------------- in-memory stores

MEMORY_OWNER_FILE = ".memory-store-owner"


def memory_store_reason(session: Any) -> str | None:
    """Why ``session`` keeps a store no second instance can open (read on the object), or None."""
    if str(getattr(session, "db_path", "")) == ":memory:":
        return (f"{type(session).__name__}.db_path is ':memory:': its store lives in the one "
                f"connection of this instance, which no other instance or process can open")
    return None


def _claim_memory_store(ctx: BuildContext, lane: str) -> bool:
    """True when this build creates the trial's in-memory store; False when this process made
    it before. Raises NotApplicable when another process owns it (its memory is not ours)."""
    marker = ctx.root / MEMORY_OWNER_FILE
    try:
        fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    except FileExistsError:
        owner = marker.read_text().strip()
        if owner != str(os.getpid()):
            raise NotApplicable(
                f"lane {lane!r}: the store of this trial lives in the memory of process "
                f"{owner}; process {os.getpid()} cannot open it") from None
        return False
    with os.fdopen(fd, "w") as out:
        out.write(str(os.getpid()))
    return True


# The in-memory store (and why it is private) of each trial root, in this process.
_PRIVATE_STORES: dict[tuple[int, str], str] = {}


async def _build_sqlite_memory(ctx: BuildContext) -> Handle:
    from agents.memory import sqlite_session

    key = (os.getpid(), str(ctx.root))
    if not _claim_memory_store(ctx, "sqlite-memory"):
        raise NotApplicable(_PRIVATE_STORES.get(key, "SQLiteSession(':memory:') keeps its "
                                                     "store in one instance's connection"))
    session = sqlite_session.SQLiteSession(ctx.session_id)  # db_path defaults to ':memory:'
    private = memory_store_reason(session) or (
        f"SQLiteSession(db_path={session.db_path!r}) was built as an in-memory store")
    _PRIVATE_STORES[key] = private

    async def reopen() -> Handle:
        raise NotApplicable(private)

    async def dispose() -> None:
        await quiet_close(session)

    return Handle(session=session, reopen=reopen, dispose=dispose, private_store=private)


@dataclass
class _SharedEngine:
    """One trial's in-memory SQLAlchemy engine and how many live instances use it."""

    engine: Any
    refs: int = 0


_MEMORY_ENGINES: dict[tuple[int, str], _SharedEngine] = {}


async def _build_sqlalchemy_memory(ctx: BuildContext) -> Handle:
    from agents.extensions.memory import sqlalchemy_session
    from sqlalchemy.ext.asyncio import create_async_engine
    from sqlalchemy.pool import StaticPool

    key = (os.getpid(), str(ctx.root))
    shared = _MEMORY_ENGINES.get(key)
    if shared is None:
        if not _claim_memory_store(ctx, "sqlalchemy-sqlite-memory"):
            raise NotApplicable("lane 'sqlalchemy-sqlite-memory': the in-memory store of this "
                                "trial was disposed with its engine; nothing can reopen it")
        # One connection for every instance: each pooled connection would see its own
        # empty in-memory database.
        engine = create_async_engine("sqlite+aiosqlite://", poolclass=StaticPool)
        shared = _MEMORY_ENGINES[key] = _SharedEngine(engine)
    session = sqlalchemy_session.SQLAlchemySession(
        ctx.session_id, engine=shared.engine, create_tables=True)
    shared.refs += 1
    released = False

    async def reopen() -> Handle:
        return await _build_sqlalchemy_memory(ctx)  # the same engine: the same store

    async def dispose() -> None:
        nonlocal released
        if released:
            return
        released = True
        shared.refs -= 1
        if shared.refs == 0:
            _MEMORY_ENGINES.pop(key, None)
            with contextlib.suppress(Exception):
                await shared.engine.dispose()

    async def write_undecodable(n: int) -> str:
        from sqlalchemy import text

        row = NOT_JSON[n % len(NOT_JSON)]
        async with shared.engine.begin() as conn:  # the engine's one connection, in turn
            await conn.execute(text("INSERT INTO agent_messages (session_id, message_data) "
                                    "VALUES (:sid, :data)"),
                               {"sid": ctx.session_id, "data": row})
        return f"a row {row!r} written to agent_messages through the shared engine"

    return Handle(session=session, reopen=reopen, dispose=dispose,
                  write_undecodable=write_undecodable)


SQLITE_MEMORY = TargetSpec(
    name="sqlite-memory",
    backend="SQLiteSession",
    module=SQLITE_MODULE,
    claims=Claims(has_close=True, close_is_async=False),
    build=_build_sqlite_memory,
    description='SQLiteSession(db_path=":memory:"): one shared connection, work in to_thread; '
                "no second instance can open its store (checks that need one abstain)",
    fixed_guards=(MEMORY_DB, NO_FILE_LOCK),
)

SQLALCHEMY_SQLITE_MEMORY = TargetSpec(
    name="sqlalchemy-sqlite-memory",
    backend="SQLAlchemySession",
    module=SQLALCHEMY_MODULE,
    claims=Claims(has_close=False, retries_lock_errors=True, retry_note=SQLALCHEMY_RETRY_NOTE),
    build=_build_sqlalchemy_memory,
    description="SQLAlchemySession on sqlite+aiosqlite:// in memory (StaticPool: one "
                "connection); instances on one trial root share the engine, so the store",
    fixed_guards=SQLITE_DIALECT,
    preload=SQLALCHEMY_SQLITE_DRIVER,
)

LOCAL_TARGETS = (SQLITE_FILE, ASYNC_SQLITE_FILE, ADVANCED_SQLITE_FILE, SQLALCHEMY_SQLITE_FILE,
                 SQLITE_MEMORY, SQLALCHEMY_SQLITE_MEMORY)
