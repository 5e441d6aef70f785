"""Adapters for the local openai-agents session backends (file-backed, no service needed)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

from targets.base import BuildContext, Claims, Handle, TargetSpec

SQLITE_MODULE = "agents.memory.sqlite_session"
ASYNC_SQLITE_MODULE = "agents.extensions.memory.async_sqlite_session"
ADVANCED_SQLITE_MODULE = "agents.extensions.memory.advanced_sqlite_session"
SQLALCHEMY_MODULE = "agents.extensions.memory.sqlalchemy_session"


async def _quiet_close(session: Any) -> None:
    # Disposal after a trial: the trial is over, so a failing close is not evidence here.
    close = getattr(session, "close", None)
    if close is None:
        return
    with contextlib.suppress(Exception):
        result = close()
        if hasattr(result, "__await__"):
            await result


def _file_builder(make: Callable[[BuildContext], Any]) -> Callable[[BuildContext], Any]:
    """A builder for a backend that keeps its store in one file under the trial root."""

    async def build(ctx: BuildContext) -> Handle:
        session = make(ctx)

        async def reopen() -> Handle:
            return await build(ctx)

        async def dispose() -> None:
            await _quiet_close(session)

        return Handle(session=session, reopen=reopen, dispose=dispose)

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

    return advanced_sqlite_session.AdvancedSQLiteSession(
        session_id=ctx.session_id, db_path=str(ctx.root / "store.db"), create_tables=True
    )


def sqlalchemy_builder(url_for: Callable[[BuildContext], str]) -> Callable[[BuildContext], Any]:
    """A builder for SQLAlchemySession.from_url; the caller disposes the engine it owns."""

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

        return Handle(session=session, reopen=reopen, dispose=dispose)

    return build


# The busy timeout of every SQLite connection these lanes open, in seconds. openai-agents
# 0.24.0 source: SQLiteSession (and AdvancedSQLiteSession, its subclass) calls
# sqlite3.connect(str(self.db_path), check_same_thread=False) and AsyncSQLiteSession calls
# aiosqlite.connect(str(self.db_path)), which passes its keywords on to sqlite3.connect: no
# timeout argument, so sqlite3's default of 5.0 s applies; SQLAlchemySession sets
# "PRAGMA busy_timeout = {_SQLITE_BUSY_TIMEOUT_MS}" (5000) on each SQLite connection.
# tests/test_waits.py checks the connect calls and reads PRAGMA busy_timeout.
SQLITE_BUSY_TIMEOUT_S = 5.0


SQLITE_FILE = TargetSpec(
    name="sqlite-file",
    backend="SQLiteSession",
    module=SQLITE_MODULE,
    claims=Claims(has_close=True, close_is_async=False),
    build=_file_builder(_sqlite),
    description="SQLiteSession on a file; work runs in asyncio.to_thread; sync close()",
    waits_s=SQLITE_BUSY_TIMEOUT_S,
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
    build=_file_builder(_advanced_sqlite),
    description="AdvancedSQLiteSession(create_tables=True) on a file; sync close()",
    waits_s=SQLITE_BUSY_TIMEOUT_S,
)

SQLALCHEMY_SQLITE_FILE = TargetSpec(
    name="sqlalchemy-sqlite-file",
    backend="SQLAlchemySession",
    module=SQLALCHEMY_MODULE,
    claims=Claims(has_close=False),
    build=sqlalchemy_builder(lambda ctx: f"sqlite+aiosqlite:///{ctx.root / 'store.db'}"),
    description="SQLAlchemySession.from_url(sqlite+aiosqlite, file); no close(), engine disposed",
    waits_s=SQLITE_BUSY_TIMEOUT_S,
)

LOCAL_TARGETS = (SQLITE_FILE, ASYNC_SQLITE_FILE, ADVANCED_SQLITE_FILE, SQLALCHEMY_SQLITE_FILE)
