"""Hand-written mutants of the LangGraph stores for ARIB-LGSTORE-011 (a store left while calls
are in flight) and ARIB-LGSTORE-012 (the TTL sweeper released with the store). Our own code
installed over a method, never SDK code."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from mutants.base import handwritten, load_class
from targets.langgraph.stores import REFERENCE_STORE_MODULE


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
