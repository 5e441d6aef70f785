"""Our reference store: the LangGraph ``BaseStore`` contract kept the plain way.

One SQLite file holds the items; every batch is one transaction under the instance's lock,
durable before it returns (``synchronous=FULL``), and ``abatch`` runs the same code without
ever suspending, so that a task cancelled around it leaves the whole batch or none of it.
Values are JSON. Search has no index (``query`` is ignored, every score is None) and lists
the newest put first; a namespace prefix matches whole labels only,
so ``("a",)`` never matches ``("ab",)``.

TTL (``ttl=`` a ``TTLConfig``, as the real stores take it): a put with a ``ttl`` (minutes)
expires that long after it; a get or search whose op asks to refresh (``refresh_ttl``, which
``BaseStore`` resolves from ``refresh_on_read``) sets the items it returns to expire ``ttl``
minutes after the read; ``sweep_ttl()`` deletes the expired items and says how many;
``start_ttl_sweeper()`` sweeps every ``sweep_interval_minutes`` in a thread until
``stop_ttl_sweeper()``. Expired items are readable until swept (``omit_expired`` is not
offered). Time is the wall clock (``time.time()``).

Semantic search (``index=`` an ``IndexConfig``: ``dims``, ``embed``, ``fields``): see
``arib.targets.langgraph.reference_index``; without it a search's ``query`` is ignored and every
score is None.
"""

from __future__ import annotations

import concurrent.futures
import json
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from langgraph.store.base import (
    BaseStore,
    GetOp,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
)

from arib.targets.langgraph.reference import open_file
from arib.targets.langgraph.reference_index import VectorIndex

_COMPARE = {"$eq": lambda a, b: a == b, "$ne": lambda a, b: a != b,
            "$gt": lambda a, b: a > b, "$gte": lambda a, b: a >= b,
            "$lt": lambda a, b: a < b, "$lte": lambda a, b: a <= b}


def make_store_tables(conn: sqlite3.Connection) -> None:
    """The items table, made unless it exists: every instance runs this when it opens its
    file and in setup(), so instances (or processes) opening one store at once succeed."""
    conn.executescript("""
CREATE TABLE IF NOT EXISTS ref_items (
    ns TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL,
    created_at TEXT NOT NULL, updated_at TEXT NOT NULL, seq INTEGER NOT NULL,
    expires_at REAL, ttl_minutes REAL,
    PRIMARY KEY (ns, key));
""")


def _matches(value: dict[str, Any], filter_: dict[str, Any] | None) -> bool:
    """Every filter key equals the value's (or meets its ``{"$op": operand}``)."""
    for name, want in (filter_ or {}).items():
        have = value.get(name)
        if isinstance(want, dict) and want and all(op in _COMPARE for op in want):
            try:
                if not all(_COMPARE[op](have, operand) for op, operand in want.items()):
                    return False
            except TypeError:  # an operand of another type never matches
                return False
        elif have != want:
            return False
    return True


def _fits(ns: tuple[str, ...], condition: MatchCondition) -> bool:
    """``ns`` starts (prefix) or ends (suffix) with the condition's path; "*" is any label."""
    path = tuple(condition.path)
    if len(path) > len(ns):
        return False
    part = ns[:len(path)] if condition.match_type == "prefix" else ns[len(ns) - len(path):]
    return all(want in ("*", have) for want, have in zip(path, part, strict=True))


class ReferenceStore(BaseStore):
    """A store on one SQLite file, serialized by a lock, durable on return."""

    supports_ttl = True

    def __init__(self, path: str | Path, *, ttl: Mapping[str, Any] | None = None,
                 index: Mapping[str, Any] | None = None) -> None:
        self.path = str(path)
        self.ttl_config = ttl  # type: ignore[assignment]  # a TTLConfig (a TypedDict)
        self._lock = threading.Lock()
        self._conn = open_file(self.path)
        make_store_tables(self._conn)
        self._index = VectorIndex(self._conn, index) if index else None
        self._stop = threading.Event()
        self._sweeper: threading.Thread | None = None

    def setup(self) -> None:
        """Make the tables unless they exist (the constructor already did; any number of
        callers at once may call it again)."""
        with self._lock:
            make_store_tables(self._conn)

    @classmethod
    @contextmanager
    def from_conn_string(cls, conn_string: str, **options: Any) -> Iterator[ReferenceStore]:
        """A store on the file ``conn_string``, disposed (its connection closed) on exit."""
        store = cls(conn_string, **options)
        try:
            yield store
        finally:
            store.dispose()

    def dispose(self) -> None:
        """Stop the sweeper and close the file (the store's owner does this; the store claims
        no close())."""
        self.stop_ttl_sweeper()
        with self._lock:
            self._conn.close()

    # ------------------------------------------------------------------ TTL

    def sweep_ttl(self) -> int:
        """Delete the items whose time is up; how many."""
        with self._lock:
            return self._conn.execute("DELETE FROM ref_items WHERE expires_at < ?",
                                      (time.time(),)).rowcount

    def start_ttl_sweeper(self, sweep_interval_minutes: float | None = None
                          ) -> concurrent.futures.Future[None]:
        """Sweep every ``sweep_interval_minutes`` (else the config's, else 5) in a thread; a
        future done when the sweeper stops (at once without a TTL config)."""
        done: concurrent.futures.Future[None] = concurrent.futures.Future()
        if not self.ttl_config:
            done.set_result(None)
            return done
        if self._sweeper is not None and self._sweeper.is_alive():
            self.stop_ttl_sweeper()
        interval = 60 * float(sweep_interval_minutes
                              or self.ttl_config.get("sweep_interval_minutes") or 5)
        self._stop.clear()

        def loop() -> None:
            while not self._stop.wait(interval):
                self.sweep_ttl()
            done.set_result(None)

        self._sweeper = threading.Thread(target=loop, daemon=True, name="ref-store-sweeper")
        self._sweeper.start()
        return done

    def stop_ttl_sweeper(self, timeout: float | None = None) -> bool:
        """Stop the sweeper; whether it stopped within ``timeout`` (True when none runs)."""
        sweeper = self._sweeper
        if sweeper is None:
            return True
        self._stop.set()
        sweeper.join(timeout)
        if sweeper.is_alive():
            return False
        self._sweeper = None
        return True

    def _refresh(self, rows: list[tuple[Any, ...]]) -> None:
        now = time.time()
        for row in rows:
            self._conn.execute(
                "UPDATE ref_items SET expires_at = ? + ttl_minutes * 60 "
                "WHERE ns = ? AND key = ? AND ttl_minutes IS NOT NULL", (now, row[0], row[1]))

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run ``ops`` in order, as one transaction; one result per op."""
        ops = list(ops)
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                results = [self._one(op) for op in ops]
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """``batch``, never suspending (a cancellation lands before or after, never inside)."""
        return self.batch(ops)

    # ------------------------------------------------------------------ one op

    def _one(self, op: Op) -> Result:
        if isinstance(op, GetOp):
            rows = self._rows("WHERE ns = ? AND key = ?", (json.dumps(list(op.namespace)),
                                                           op.key))
            if getattr(op, "refresh_ttl", False):
                self._refresh(rows)
            return self._item(rows[0], Item) if rows else None
        if isinstance(op, PutOp):
            self._put(op)
            return None
        if isinstance(op, SearchOp):
            prefix = tuple(op.namespace_prefix)
            found = [row for row in self._rows("ORDER BY seq DESC", ())
                     if tuple(json.loads(row[0]))[:len(prefix)] == prefix
                     and _matches(json.loads(row[2]), op.filter)]
            ranked: list[tuple[Any, float | None]] = (
                self._index.ranked(found, op.query) if self._index and op.query
                else [(row, None) for row in found])
            page = ranked[op.offset:op.offset + op.limit]
            if getattr(op, "refresh_ttl", False):
                self._refresh([row for row, _ in page])
            return [self._item(row, SearchItem, score=score) for row, score in page]
        if isinstance(op, ListNamespacesOp):
            names = {tuple(json.loads(row[0])) for row in self._rows("", ())}
            kept = sorted({ns[:op.max_depth] if op.max_depth is not None else ns
                           for ns in names
                           if all(_fits(ns, c) for c in op.match_conditions or ())})
            return kept[op.offset:op.offset + op.limit]
        raise TypeError(f"ReferenceStore: unknown operation {op!r}")

    def _rows(self, tail: str, args: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        return self._conn.execute(
            f"SELECT ns, key, value, created_at, updated_at FROM ref_items {tail}", args
        ).fetchall()

    def _put(self, op: PutOp) -> None:
        ns = json.dumps(list(op.namespace))
        if self._index is not None:
            self._index.replace(ns, op.key, op.value, op.index)
        if op.value is None:
            self._conn.execute("DELETE FROM ref_items WHERE ns = ? AND key = ?", (ns, op.key))
            return
        now = datetime.now(timezone.utc).isoformat()
        seq = self._conn.execute("SELECT coalesce(max(seq), 0) + 1 FROM ref_items").fetchone()[0]
        ttl = getattr(op, "ttl", None)  # releases before the TTL API have no PutOp.ttl
        expires = None if ttl is None else time.time() + 60 * float(ttl)
        self._conn.execute(
            "INSERT INTO ref_items VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (ns, key) DO "
            "UPDATE SET value = excluded.value, updated_at = excluded.updated_at, "
            "seq = excluded.seq, expires_at = excluded.expires_at, "
            "ttl_minutes = excluded.ttl_minutes",
            (ns, op.key, json.dumps(op.value), now, now, seq, expires, ttl))

    @staticmethod
    def _item(row: tuple[Any, ...], kind: type[Item], **extra: Any) -> Any:
        ns, key, value, created, updated = row
        return kind(value=json.loads(value), key=key, namespace=tuple(json.loads(ns)),
                    created_at=datetime.fromisoformat(created),
                    updated_at=datetime.fromisoformat(updated), **extra)
