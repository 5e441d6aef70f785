"""Hand-written mutants of the LangGraph stores for the TTL checks (ARIB-LGSTORE-004 and -005).
Our own code installed over a method, never SDK code."""

from __future__ import annotations

import time
from typing import Any

from arib.mutants.base import handwritten, load_class
from arib.targets.langgraph.stores import (
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


@handwritten(target="lg-store-reference", module=REFERENCE_STORE_MODULE,
             qualname="ReferenceStore._one",
             defect="a search never refreshes the TTLs of the items it returns")
def lg_store_reference_search_never_refreshes() -> None:
    from langgraph.store.base import SearchOp

    cls = load_class(REFERENCE_STORE_MODULE, "ReferenceStore")
    original = cls._one

    def _one(self: Any, op: Any) -> Any:
        if isinstance(op, SearchOp) and "refresh_ttl" in op._fields:
            op = op._replace(refresh_ttl=False)
        return original(self, op)

    cls._one = _one


@handwritten(target="lg-store-sqlite-file", module=SQLITE_STORE_MODULE,
             qualname="SqliteStore._get_batch_GET_ops_queries",
             defect="a get never refreshes the TTL of the item it returns")
def lg_sqlite_store_get_never_refreshes() -> None:
    cls = load_class(SQLITE_STORE_MODULE, "SqliteStore")
    original = cls._get_batch_GET_ops_queries

    def _get_batch_GET_ops_queries(self: Any, get_ops: Any) -> Any:
        return [query for query in original(self, get_ops) if query.kind != "refresh"]

    cls._get_batch_GET_ops_queries = _get_batch_GET_ops_queries
