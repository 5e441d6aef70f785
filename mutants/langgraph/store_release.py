"""Hand-written mutants of the LangGraph stores for ARIB-LGSTORE-011 (a store left while calls
are in flight), ARIB-LGSTORE-012 (the TTL sweeper released with the store) and ARIB-LGSTORE-013
(a fresh store set up by several processes at once). Our own code installed over a function or
method, never SDK code."""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from arib.mutants.base import handwritten, load_class
from arib.targets.langgraph.stores import REFERENCE_STORE_MODULE


@handwritten(target="lg-store-reference", module=REFERENCE_STORE_MODULE,
             qualname="ReferenceStore.from_conn_string",
             defect="leaving from_conn_string's context closes the connection and leaves the "
                    "TTL sweeper running")
def lg_store_reference_exit_keeps_sweeper() -> None:
    cls = load_class(REFERENCE_STORE_MODULE, "ReferenceStore")

    @contextmanager
    def from_conn_string(klass: Any, conn_string: str, **options: Any) -> Iterator[Any]:
        store = klass(conn_string, **options)
        try:
            yield store
        finally:
            with store._lock:
                store._conn.close()

    cls.from_conn_string = classmethod(from_conn_string)


@handwritten(target="lg-store-reference", module=REFERENCE_STORE_MODULE,
             qualname="ReferenceStore.dispose",
             defect="dispose() takes the store's lock and never gives it back: a call in "
                    "flight when the store is left waits for ever instead of refusing")
def lg_store_reference_dispose_keeps_the_lock() -> None:
    cls = load_class(REFERENCE_STORE_MODULE, "ReferenceStore")

    def dispose(self: Any) -> None:
        self.stop_ttl_sweeper()
        self._lock.acquire()
        self._conn.close()

    cls.dispose = dispose


@handwritten(target="lg-store-reference", module=REFERENCE_STORE_MODULE,
             qualname="make_store_tables",
             defect="the items table is made after looking whether it exists (a first run "
                    "that takes 20 ms): instances setting one fresh store up at once both "
                    "create it, and the later fails")
def lg_store_reference_tables_checked_then_made() -> None:
    import time

    module = importlib.import_module(REFERENCE_STORE_MODULE)

    def make_store_tables(conn: Any) -> None:
        found = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name = "
                             "'ref_items'").fetchone()
        if found is None:
            time.sleep(0.02)
            conn.execute("CREATE TABLE ref_items (ns TEXT NOT NULL, key TEXT NOT NULL, "
                         "value TEXT NOT NULL, created_at TEXT NOT NULL, updated_at TEXT NOT "
                         "NULL, seq INTEGER NOT NULL, expires_at REAL, ttl_minutes REAL, "
                         "PRIMARY KEY (ns, key))")

    module.make_store_tables = make_store_tables  # type: ignore[attr-defined]
