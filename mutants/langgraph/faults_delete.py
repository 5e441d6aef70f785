"""Hand-written mutants that a thread written again after delete_thread shows
(ARIB-LGDEL-001): delete_thread removes the checkpoints and leaves their pending writes, which
come back when a checkpoint id is put again; or keeps the thread's rows where no read looks,
which the store read besides the saver shows. Our own code, installed over a saver's method."""

from __future__ import annotations

from typing import Any

from arib.mutants.base import handwritten, load_class

REFERENCE = "arib.targets.langgraph.reference"
SQLITE = "langgraph.checkpoint.sqlite"
ASYNC_SQLITE = "langgraph.checkpoint.sqlite.aio"
CHECKPOINTS_ONLY = "DELETE FROM checkpoints WHERE thread_id = ?"


@handwritten(target="lg-reference", module=REFERENCE, qualname="ReferenceSaver.delete_thread",
             defect="delete_thread removes the thread's checkpoints but not their writes")
def lg_reference_delete_keeps_writes() -> None:
    cls = load_class(REFERENCE, "ReferenceSaver")

    def delete_thread(self: Any, thread_id: str) -> None:
        with self._lock, self._conn:
            self._conn.execute("BEGIN IMMEDIATE")
            self._conn.execute("DELETE FROM ref_checkpoints WHERE thread_id = ?",
                               (str(thread_id),))

    cls.delete_thread = delete_thread


@handwritten(target="lg-sqlite-file", module=SQLITE, qualname="SqliteSaver.delete_thread",
             defect="delete_thread removes the thread's checkpoints but not their writes")
def lg_sqlite_delete_keeps_writes() -> None:
    cls = load_class(SQLITE, "SqliteSaver")

    def delete_thread(self: Any, thread_id: str) -> None:
        with self.cursor() as cur:
            cur.execute(CHECKPOINTS_ONLY, (str(thread_id),))

    cls.delete_thread = delete_thread


@handwritten(target="lg-async-sqlite-file", module=ASYNC_SQLITE,
             qualname="AsyncSqliteSaver.adelete_thread",
             defect="adelete_thread removes the thread's checkpoints but not their writes")
def lg_async_sqlite_delete_keeps_writes() -> None:
    cls = load_class(ASYNC_SQLITE, "AsyncSqliteSaver")

    async def adelete_thread(self: Any, thread_id: str) -> None:
        async with self.lock:
            await self.conn.execute(CHECKPOINTS_ONLY, (str(thread_id),))
            await self.conn.commit()

    cls.adelete_thread = adelete_thread


@handwritten(target="lg-reference", module=REFERENCE, qualname="ReferenceSaver.delete_thread",
             defect="delete_thread is a soft delete: it moves the thread's rows to a tombstone "
                    "table that no read looks at, so the data a user asked to delete stays in "
                    "the store")
def lg_reference_delete_is_soft() -> None:
    cls = load_class(REFERENCE, "ReferenceSaver")

    def delete_thread(self: Any, thread_id: str) -> None:
        with self._lock, self._conn:
            self._conn.execute("BEGIN IMMEDIATE")
            self._conn.execute("CREATE TABLE IF NOT EXISTS ref_tombstones (thread_id TEXT, "
                               "ns TEXT, checkpoint_id TEXT, body BLOB)")
            for table in ("ref_checkpoints", "ref_writes"):
                self._conn.execute(f"INSERT INTO ref_tombstones SELECT thread_id, ns, "
                                   f"checkpoint_id, body FROM {table} WHERE thread_id = ?",
                                   (str(thread_id),))
                self._conn.execute(f"DELETE FROM {table} WHERE thread_id = ?",
                                   (str(thread_id),))

    cls.delete_thread = delete_thread
