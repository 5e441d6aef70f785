"""Hand-written mutants that a saver used after its context exited shows (ARIB-LGCLOSE-001):
on exit the saver is left on a scratch in-memory store, so a put after the exit succeeds and
is lost. Our own code, installed over a saver's ``from_conn_string``."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

from arib.mutants.base import handwritten, load_class

REFERENCE = "arib.targets.langgraph.reference"
SQLITE = "langgraph.checkpoint.sqlite"
ASYNC_SQLITE = "langgraph.checkpoint.sqlite.aio"


def _scratch() -> sqlite3.Connection:
    return sqlite3.connect(":memory:", check_same_thread=False)


@handwritten(target="lg-reference", module=REFERENCE,
             qualname="ReferenceSaver.from_conn_string",
             defect="on exit the saver is left on a scratch in-memory store: a put after the "
                    "exit returns and is lost")
def lg_reference_exit_leaves_a_scratch_store() -> None:
    cls = load_class(REFERENCE, "ReferenceSaver")
    original = cls.from_conn_string
    make_tables = __import__(REFERENCE, fromlist=["make_tables"]).make_tables

    @contextmanager
    def from_conn_string(conn_string: str) -> Iterator[Any]:
        with original(conn_string) as saver:
            yield saver
        saver._conn = _scratch()
        saver._conn.isolation_level = None
        make_tables(saver._conn)

    cls.from_conn_string = staticmethod(from_conn_string)


@handwritten(target="lg-sqlite-file", module=SQLITE, qualname="SqliteSaver.from_conn_string",
             defect="on exit the saver is left on a scratch in-memory store: a put after the "
                    "exit returns and is lost")
def lg_sqlite_exit_leaves_a_scratch_store() -> None:
    cls = load_class(SQLITE, "SqliteSaver")
    original = cls.from_conn_string

    @contextmanager
    def from_conn_string(conn_string: str) -> Iterator[Any]:
        with original(conn_string) as saver:
            yield saver
        saver.conn, saver.is_setup = _scratch(), False

    cls.from_conn_string = staticmethod(from_conn_string)


@handwritten(target="lg-async-sqlite-file", module=ASYNC_SQLITE,
             qualname="AsyncSqliteSaver.from_conn_string",
             defect="on exit the saver is left on a scratch in-memory store: a put after the "
                    "exit returns and is lost")
def lg_async_sqlite_exit_leaves_a_scratch_store() -> None:
    cls = load_class(ASYNC_SQLITE, "AsyncSqliteSaver")
    original = cls.from_conn_string

    @asynccontextmanager
    async def from_conn_string(conn_string: str) -> AsyncIterator[Any]:
        import aiosqlite

        async with original(conn_string) as saver:
            yield saver
        saver.conn, saver.is_setup = await aiosqlite.connect(":memory:"), False

    cls.from_conn_string = staticmethod(from_conn_string)
