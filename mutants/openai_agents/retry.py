"""Hand-written mutants about lock errors (paired with ARIB-RETRY-001 and ARIB-LOCK-001)."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import Any

import anyio

from arib.mutants.base import handwritten, load_class

REF = "arib.targets.openai_agents.reference"


@handwritten(
    target="reference",
    module=REF,
    qualname="ReferenceSession._transact",
    defect="retry without rollback: a write that meets a lock error is run again inside the "
    "same open transaction, so what it did before the error is applied twice",
)
def reference_keeps_failed_transaction() -> None:
    cls = load_class(REF, "ReferenceSession")

    async def _transact(self: Any, work: Callable[[sqlite3.Connection], Any],
                        write: bool) -> Any:
        conn = self._live()
        conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")
        while True:
            try:
                result = work(conn)
                conn.commit()
                return result
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc).lower():
                    conn.rollback()
                    raise
            await anyio.sleep(0.001)

    cls._transact = _transact


@handwritten(
    target="reference",
    module=REF,
    qualname="_connect",
    defect="no wait at open: switching a store another connection is writing to WAL fails "
    "at once with 'database is locked', and the error reaches the caller",
)
def reference_open_gives_up_on_lock() -> None:
    import importlib

    module = importlib.import_module(REF)

    def _connect(db_path: str) -> sqlite3.Connection:
        conn = sqlite3.connect(db_path, timeout=0)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=FULL")
        conn.execute(module.SCHEMA)
        conn.commit()
        return conn

    vars(module)["_connect"] = _connect
