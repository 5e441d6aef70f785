"""Hand-written mutants of the LangGraph stores for the TTL checks (ARIB-LGSTORE-004 and -005).
Our own code installed over a method, never SDK code."""

from __future__ import annotations

import time
from typing import Any

from mutants.base import handwritten, load_class
from targets.langgraph.stores import (
    ASYNC_SQLITE_STORE_MODULE,
    REFERENCE_STORE_MODULE,
    SQLITE_STORE_MODULE,
)


@handwritten(target="lg-store-reference", module=REFERENCE_STORE_MODULE,
             qualname="ReferenceStore.sweep_ttl",
             defect="the sweep deletes every item that has a TTL, expired or not")
def lg_store_reference_sweep_takes_unexpired() -> None:
    cls = load_class(REFERENCE_STORE_MODULE, "ReferenceStore")

    def sweep_ttl(self: Any) -> int:
        with self._lock:
            return int(self._conn.execute(
                "DELETE FROM ref_items WHERE expires_at IS NOT NULL").rowcount)

    cls.sweep_ttl = sweep_ttl


@handwritten(target="lg-store-sqlite-file", module=SQLITE_STORE_MODULE,
             qualname="SqliteStore.sweep_ttl",
             defect="the sweep counts the expired items and deletes none")
def lg_sqlite_store_sweep_counts_only() -> None:
    cls = load_class(SQLITE_STORE_MODULE, "SqliteStore")

    def sweep_ttl(self: Any) -> int:
        with self._cursor() as cur:
            cur.execute("SELECT count(*) FROM store WHERE expires_at IS NOT NULL "
                        "AND expires_at < CURRENT_TIMESTAMP")
            return int(cur.fetchone()[0])

    cls.sweep_ttl = sweep_ttl


@handwritten(target="lg-store-async-sqlite-file", module=ASYNC_SQLITE_STORE_MODULE,
             qualname="AsyncSqliteStore.stop_ttl_sweeper",
             defect="stop_ttl_sweeper() says it stopped the sweeper and leaves it running")
def lg_async_sqlite_store_stop_leaves_sweeper() -> None:
    cls = load_class(ASYNC_SQLITE_STORE_MODULE, "AsyncSqliteStore")

    async def stop_ttl_sweeper(self: Any, timeout: float | None = None) -> bool:
        time.sleep(0)
        return True

    cls.stop_ttl_sweeper = stop_ttl_sweeper
