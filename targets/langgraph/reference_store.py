"""Our reference store: the LangGraph ``BaseStore`` contract kept the plain way.

One SQLite file holds the items; every batch is one transaction under the instance's lock,
durable before it returns (``synchronous=FULL``), and ``abatch`` runs the same code without
ever suspending, so that a task cancelled around it leaves the whole batch or none of it.
Values are JSON. Search has no index (``query`` is ignored, every score is None) and lists
the newest put first; a namespace prefix matches whole labels only,
so ``("a",)`` never matches ``("ab",)``. No TTL (``supports_ttl`` is False).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable
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

from targets.langgraph.reference import open_file

SCHEMA = """
CREATE TABLE IF NOT EXISTS ref_items (
    ns TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL,
    created_at TEXT NOT NULL, updated_at TEXT NOT NULL, seq INTEGER NOT NULL,
    PRIMARY KEY (ns, key));
"""
_COMPARE = {"$eq": lambda a, b: a == b, "$ne": lambda a, b: a != b,
            "$gt": lambda a, b: a > b, "$gte": lambda a, b: a >= b,
            "$lt": lambda a, b: a < b, "$lte": lambda a, b: a <= b}


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

    supports_ttl = False

    def __init__(self, path: str | Path) -> None:
        self.path = str(path)
        self._lock = threading.Lock()
        self._conn = open_file(self.path)
        self._conn.executescript(SCHEMA)

    def dispose(self) -> None:
        """Close the file (the store's owner does this; the store claims no close())."""
        with self._lock:
            self._conn.close()

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
            return self._item(rows[0], Item) if rows else None
        if isinstance(op, PutOp):
            self._put(op)
            return None
        if isinstance(op, SearchOp):
            prefix = tuple(op.namespace_prefix)
            found = [row for row in self._rows("ORDER BY seq DESC", ())
                     if tuple(json.loads(row[0]))[:len(prefix)] == prefix
                     and _matches(json.loads(row[2]), op.filter)]
            return [self._item(row, SearchItem)
                    for row in found[op.offset:op.offset + op.limit]]
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
        if op.value is None:
            self._conn.execute("DELETE FROM ref_items WHERE ns = ? AND key = ?", (ns, op.key))
            return
        now = datetime.now(timezone.utc).isoformat()
        seq = self._conn.execute("SELECT coalesce(max(seq), 0) + 1 FROM ref_items").fetchone()[0]
        self._conn.execute(
            "INSERT INTO ref_items VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (ns, key) DO UPDATE "
            "SET value = excluded.value, updated_at = excluded.updated_at, seq = excluded.seq",
            (ns, op.key, json.dumps(op.value), now, now, seq))

    @staticmethod
    def _item(row: tuple[Any, ...], kind: type[Item]) -> Any:
        ns, key, value, created, updated = row
        return kind(value=json.loads(value), key=key, namespace=tuple(json.loads(ns)),
                    created_at=datetime.fromisoformat(created),
                    updated_at=datetime.fromisoformat(updated))
