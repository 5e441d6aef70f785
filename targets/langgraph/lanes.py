"""The LangGraph family's lanes: each a saver (or store) class built one way, on its own store.

``Handle.session`` is the saver. Every trial gets a fresh store under its root (a SQLite file,
or, for the PostgreSQL lanes, a schema of its own), and ``reopen()`` opens another instance on
that store. ``API`` says which half of the saver interface a lane's class serves (``sync``,
``async`` or ``both``); the checks call that half (``checks.langgraph._saver``), and the claim
is verified against the runtime object (``verify_api``).
"""

from __future__ import annotations

import importlib
import sqlite3
from collections.abc import Mapping
from typing import Any

import anyio.to_thread

from targets.base import BuildContext, Claims, Handle, NotApplicable, TargetSpec

MEMORY_MODULE = "langgraph.checkpoint.memory"
SQLITE_MODULE = "langgraph.checkpoint.sqlite"
ASYNC_SQLITE_MODULE = "langgraph.checkpoint.sqlite.aio"
REFERENCE_MODULE = "targets.langgraph.reference"
# No saver of these packages has a close(): the caller owns the connection it passed in.
NO_CLOSE = Claims(has_close=False)


def _saver_class(module: str, *names: str) -> type:
    """The first of ``names`` the (possibly mutated) module defines, looked up now."""
    loaded = importlib.import_module(module)
    for name in names:
        if hasattr(loaded, name):
            return getattr(loaded, name)  # type: ignore[no-any-return]
    raise ImportError(f"{module} defines none of {names!r}")


async def _nothing() -> None:
    return None


async def _build_reference(ctx: BuildContext) -> Handle:
    saver = _saver_class(REFERENCE_MODULE, "ReferenceSaver")(ctx.root / "reference.db")

    async def dispose() -> None:
        saver.dispose()

    return Handle(session=saver, reopen=lambda: _build_reference(ctx), dispose=dispose)


async def _build_memory(ctx: BuildContext) -> Handle:
    saver = _saver_class(MEMORY_MODULE, "InMemorySaver", "MemorySaver")()
    why = (f"{type(saver).__name__} keeps its checkpoints in this object's dictionaries; no "
           f"second instance reaches them")

    async def reopen() -> Handle:
        raise NotApplicable(why)

    return Handle(session=saver, reopen=reopen, dispose=_nothing, private_store=why)


async def _build_sqlite(ctx: BuildContext) -> Handle:
    conn = sqlite3.connect(ctx.root / "checkpoints.db", check_same_thread=False)
    saver = _saver_class(SQLITE_MODULE, "SqliteSaver")(conn)

    async def dispose() -> None:
        conn.close()

    return Handle(session=saver, reopen=lambda: _build_sqlite(ctx), dispose=dispose)


async def _build_async_sqlite(ctx: BuildContext, memory: bool = False) -> Handle:
    aiosqlite = importlib.import_module("aiosqlite")
    conn = await aiosqlite.connect(":memory:" if memory else str(ctx.root / "checkpoints.db"))
    saver = _saver_class(ASYNC_SQLITE_MODULE, "AsyncSqliteSaver")(conn)

    async def dispose() -> None:
        await conn.close()

    if memory:
        why = "AsyncSqliteSaver on ':memory:' keeps its store in its one aiosqlite connection"

        async def private() -> Handle:
            raise NotApplicable(why)

        return Handle(session=saver, reopen=private, dispose=dispose, private_store=why)
    return Handle(session=saver, reopen=lambda: _build_async_sqlite(ctx), dispose=dispose)


async def _build_async_sqlite_memory(ctx: BuildContext) -> Handle:
    return await _build_async_sqlite(ctx, memory=True)


REFERENCE = TargetSpec(
    name="lg-reference", backend="ReferenceSaver", module=REFERENCE_MODULE, claims=NO_CLOSE,
    build=_build_reference, reference=True,
    description="our reference checkpointer: one SQLite file, one lock, durable on return",
)
MEMORY = TargetSpec(
    name="lg-memory", backend="InMemorySaver", module=MEMORY_MODULE, claims=NO_CLOSE,
    build=_build_memory, description="InMemorySaver (MemorySaver before 2.0.x's rename)",
)
SQLITE_FILE = TargetSpec(
    name="lg-sqlite-file", backend="SqliteSaver", module=SQLITE_MODULE, claims=NO_CLOSE,
    build=_build_sqlite, waits_s=5.0,
    description="SqliteSaver on a sqlite3 connection to a file (check_same_thread=False)",
)
ASYNC_SQLITE_FILE = TargetSpec(
    name="lg-async-sqlite-file", backend="AsyncSqliteSaver", module=ASYNC_SQLITE_MODULE,
    claims=NO_CLOSE, build=_build_async_sqlite, waits_s=5.0,
    description="AsyncSqliteSaver on an aiosqlite connection to a file",
)
ASYNC_SQLITE_MEMORY = TargetSpec(
    name="lg-async-sqlite-memory", backend="AsyncSqliteSaver", module=ASYNC_SQLITE_MODULE,
    claims=NO_CLOSE, build=_build_async_sqlite_memory,
    description="AsyncSqliteSaver on an aiosqlite connection to ':memory:'",
)

# Which half of the saver interface each lane's class serves; the other half raises
# (SqliteSaver's async methods) or refuses calls from the event loop (AsyncSqliteSaver's sync).
API: Mapping[str, str] = {
    REFERENCE.name: "both", MEMORY.name: "both", SQLITE_FILE.name: "sync",
    ASYNC_SQLITE_FILE.name: "async", ASYNC_SQLITE_MEMORY.name: "async",
}
CHECKPOINTER_LANES = (REFERENCE, MEMORY, SQLITE_FILE, ASYNC_SQLITE_FILE, ASYNC_SQLITE_MEMORY)
LANES = CHECKPOINTER_LANES
SURVEY_LANES = tuple(lane for lane in LANES if not lane.reference)


async def read_checkpoints(saver: Any, limit: int | None = None) -> list[Any]:
    """How the family's checks read a saver: every checkpoint tuple it lists, newest first,
    through the half of its interface that its class serves."""
    if api_of(saver) == "sync":
        return await anyio.to_thread.run_sync(lambda: list(saver.list(None, limit=limit)))
    return [item async for item in saver.alist(None, limit=limit)]


def api_of(saver: Any) -> str:
    """``API`` of the lane whose class ``saver`` is (``both`` for a class no lane names)."""
    for lane in LANES:
        if type(saver).__name__ == lane.backend:
            return API[lane.name]
    return "both"
