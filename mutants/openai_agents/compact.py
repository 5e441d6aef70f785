"""Hand-written compaction mutants (paired with ARIB-COMPACT-*): each models one defect of a
store's compaction snapshot (``_get_compaction_snapshot`` and its ``replace_suffix``)."""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from arib.mutants.base import handwritten, load_class

REF = "arib.targets.openai_agents.reference"


def _snapshot_with(swap_sql: str | None, conditional: bool = True, split: bool = False) -> Any:
    """A reference ``_get_compaction_snapshot`` whose swap is given as its defect varies."""
    from arib.targets.openai_agents.reference_compaction import ReferenceSnapshot

    async def snapshot(self: Any, limit: int, *, prune_prefix: Any = None) -> Any:
        sid = self.session_id

        def read(conn: sqlite3.Connection) -> list[tuple[int, str]]:
            rows = conn.execute("SELECT seq, body FROM items WHERE session_id = ? "
                                "ORDER BY seq DESC LIMIT ?", (sid, limit)).fetchall()
            return [tuple(r) for r in rows[::-1]]

        async with self._lock:
            rows = await self._transact(read, write=False)
        older = len(rows) >= limit

        async def replace_suffix(start: int, output: list[Any]) -> bool:
            expected = rows[start:]
            if not expected:
                return False

            def delete(conn: sqlite3.Connection) -> bool:
                current = conn.execute("SELECT seq, body FROM items WHERE session_id = ? "
                                       "ORDER BY seq DESC LIMIT ?",
                                       (sid, len(expected))).fetchall()[::-1]
                if conditional and [tuple(r) for r in current] != expected:
                    return False
                if swap_sql is not None:
                    conn.execute(swap_sql, (sid, expected[0][0]))
                return True

            def insert(conn: sqlite3.Connection) -> None:
                conn.executemany("INSERT INTO items (session_id, item_key, body) "
                                 "VALUES (?, NULL, ?)",
                                 [(sid, json.dumps(item)) for item in output])

            def both(conn: sqlite3.Connection) -> bool:
                if not delete(conn):
                    return False
                insert(conn)
                return True

            import anyio

            async with self._lock:
                if not split:
                    return bool(await self._transact(both, write=True))
                if not await self._transact(delete, write=True):
                    return False
            await anyio.sleep(0.005)
            async with self._lock:
                await self._transact(insert, write=True)
            return True

        return ReferenceSnapshot([json.loads(b) for _, b in rows], not older, replace_suffix)

    return snapshot


@handwritten(
    target="reference",
    module=REF,
    qualname="ReferenceSession._get_compaction_snapshot",
    defect="the swap inserts the compact output but deletes nothing: the compacted items "
    "stay in the history next to their summary",
)
def reference_compaction_keeps_old_suffix() -> None:
    cls = load_class(REF, "ReferenceSession")
    cls._get_compaction_snapshot = _snapshot_with(None)


@handwritten(
    target="reference",
    module=REF,
    qualname="ReferenceSession._get_compaction_snapshot",
    defect="the swap deletes the compacted range by position alone, in every session: a peer "
    "session's items written after the range start are deleted with it",
)
def reference_compaction_deletes_peer_rows() -> None:
    cls = load_class(REF, "ReferenceSession")
    cls._get_compaction_snapshot = _snapshot_with(
        "DELETE FROM items WHERE (session_id = ? OR 1 = 1) AND seq >= ?")


@handwritten(
    target="reference",
    module=REF,
    qualname="ReferenceSession._get_compaction_snapshot",
    defect="unconditional swap: the compacted range is replaced without checking it is still "
    "the newest, unchanged rows, so a concurrent append, pop or clear is overwritten",
)
def reference_compaction_unconditional_swap() -> None:
    cls = load_class(REF, "ReferenceSession")
    cls._get_compaction_snapshot = _snapshot_with(
        "DELETE FROM items WHERE session_id = ? AND seq >= ?", conditional=False)


@handwritten(
    target="reference",
    module=REF,
    qualname="ReferenceSession._get_compaction_snapshot",
    defect="a swap in two transactions: the compacted range is deleted and committed, then "
    "the output is inserted in a second transaction, so a reader sees neither",
)
def reference_compaction_swap_in_two_steps() -> None:
    cls = load_class(REF, "ReferenceSession")
    cls._get_compaction_snapshot = _snapshot_with(
        "DELETE FROM items WHERE session_id = ? AND seq >= ?", split=True)


@handwritten(
    target="reference",
    module="arib.targets.openai_agents.reference_compaction",
    qualname="_prune_oldest",
    defect="a reclaim that ignores the expiry test: every row older than the replaced range "
    "is deleted, live items and unreadable envelopes included",
)
def reference_compaction_prunes_live_rows() -> None:
    import arib.targets.openai_agents.reference_compaction as module

    def prune_everything(conn: sqlite3.Connection, session_id: str, before: int,
                         prune: Any) -> None:
        conn.execute("DELETE FROM items WHERE session_id = ? AND seq < ?", (session_id, before))

    module._prune_oldest = prune_everything  # type: ignore[assignment]


SQLITE = "agents.memory.sqlite_session"
ASYNC_SQLITE = "agents.extensions.memory.async_sqlite_session"
SQLALCHEMY = "agents.extensions.memory.sqlalchemy_session"


def _wrap_snapshot(module: str, name: str, swap: Any) -> None:
    """Replace ``name._get_compaction_snapshot`` by the original whose ``replace_suffix`` is
    ``swap(session, original_replace, start, output)``."""
    from dataclasses import replace

    cls = load_class(module, name)
    original = cls._get_compaction_snapshot

    async def snapshot(self: Any, limit: int, *, prune_prefix: Any = None) -> Any:
        snap = await original(self, limit, prune_prefix=prune_prefix)
        if snap is None:
            return None

        async def replace_suffix(start: int, output: list[Any]) -> bool:
            return bool(await swap(self, snap.replace_suffix, start, output))

        return replace(snap, replace_suffix=replace_suffix)

    cls._get_compaction_snapshot = snapshot


@handwritten(
    target="sqlalchemy-sqlite-file",
    module=SQLALCHEMY,
    qualname="SQLAlchemySession._get_compaction_snapshot",
    defect="off-by-one swap: the replaced range starts one item late, so the first compacted "
    "item stays in the history beside the output that summarizes it",
)
def sqlalchemy_compaction_swap_starts_late() -> None:
    async def swap(session: Any, replace: Any, start: int, output: list[Any]) -> bool:
        return bool(await replace(start + 1, output))

    _wrap_snapshot(SQLALCHEMY, "SQLAlchemySession", swap)


@handwritten(
    target="async-sqlite-file",
    module=ASYNC_SQLITE,
    qualname="AsyncSQLiteSession._get_compaction_snapshot",
    defect="a swap in two commits: the compacted range is deleted and committed, then the "
    "output is appended in a second transaction, so a reader sees neither",
)
def async_sqlite_compaction_swap_in_two_commits() -> None:
    import asyncio

    async def swap(session: Any, replace: Any, start: int, output: list[Any]) -> bool:
        if not await replace(start, []):
            return False
        await asyncio.sleep(0.005)
        await session.add_items(output)
        return True

    _wrap_snapshot(ASYNC_SQLITE, "AsyncSQLiteSession", swap)


@handwritten(
    target="sqlite-file",
    module=SQLITE,
    qualname="SQLiteSession._get_compaction_snapshot",
    defect="a stale swap: the rows from the first compacted one on are deleted and the output "
    "inserted without checking they are still the newest, unchanged rows",
)
def sqlite_compaction_swap_ignores_tail_change() -> None:
    cls = load_class(SQLITE, "SQLiteSession")
    original = cls._get_compaction_snapshot

    async def snapshot(self: Any, limit: int, *, prune_prefix: Any = None) -> Any:
        import asyncio
        from dataclasses import replace

        snap = await original(self, limit, prune_prefix=prune_prefix)
        if snap is None:
            return None
        table = self.messages_table

        def newest_ids() -> list[int]:
            with self._locked_connection() as conn:
                rows = conn.execute(f"SELECT id FROM {table} WHERE session_id = ? "
                                    "ORDER BY id DESC LIMIT ?",
                                    (self.session_id, len(snap.items))).fetchall()
            return [row[0] for row in rows[::-1]]

        ids = await asyncio.to_thread(newest_ids)

        async def replace_suffix(start: int, output: list[Any]) -> bool:
            if start >= len(ids):
                return False

            def swap() -> bool:
                with self._write_connection() as conn:
                    conn.execute(f"DELETE FROM {table} WHERE session_id = ? AND id >= ?",
                                 (self.session_id, ids[start]))
                    self._insert_items(conn, output)
                    conn.commit()
                return True

            return await asyncio.to_thread(swap)

        return replace(snap, replace_suffix=replace_suffix)

    cls._get_compaction_snapshot = snapshot
