"""Hand-written mutants that a read held in the middle of its call shows (ARIB-LGRUN-001): reads
that are not one snapshot of the thread, so that writes and a delete landing while the read
goes on show on some of what it returns and not on the rest. Our own code, installed over a
saver's method in the child process."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator, Iterator
from typing import Any

from arib.mutants.base import handwritten, load_class

REFERENCE = "arib.targets.langgraph.reference"
ASYNC_SQLITE = "langgraph.checkpoint.sqlite.aio"


def _autocommit_reader(path: str) -> sqlite3.Connection:
    """A second connection to the reference's file, in autocommit: each statement its own
    read, so that reads need no lock and never wait for a writer."""
    return sqlite3.connect(path, check_same_thread=False, isolation_level=None)


@handwritten(target="lg-reference", module=REFERENCE, qualname="ReferenceSaver.list",
             defect="list and get_tuple read through a second, autocommit connection without "
                    "the lock (reads never wait for writes): the checkpoints in one statement, "
                    "each one's writes in another as it is reached, so a listing is not one "
                    "snapshot")
def lg_reference_reads_without_snapshot() -> None:
    cls = load_class(REFERENCE, "ReferenceSaver")

    def rows(self: Any, config: Any, latest: bool) -> list[Any]:
        conf = (config or {}).get("configurable", {})
        where, args = ["1 = 1"], []
        for column, key in (("thread_id", "thread_id"), ("ns", "checkpoint_ns"),
                            ("checkpoint_id", "checkpoint_id")):
            if conf.get(key) is not None:
                where.append(f"{column} = ?")
                args.append(str(conf[key]))
        reader = getattr(self, "_reader", None) or _autocommit_reader(self.path)
        self._reader = reader
        return reader.execute(
            "SELECT * FROM ref_checkpoints WHERE " + " AND ".join(where)
            + " ORDER BY checkpoint_id DESC" + (" LIMIT 1" if latest else ""), args).fetchall()

    def tuple_of(self: Any, row: Any) -> Any:
        from langgraph.checkpoint.base import CheckpointTuple

        thread_id, ns, checkpoint_id, parent_id, kind, body, meta_kind, meta = row
        checkpoint = self.serde.loads_typed((kind, body))
        writes = self._reader.execute(
            "SELECT task_id, channel, kind, body FROM ref_writes WHERE thread_id = ? AND ns = ? "
            "AND checkpoint_id = ? ORDER BY task_id, idx", (thread_id, ns, checkpoint_id))
        conf = {"thread_id": thread_id, "checkpoint_ns": ns}
        return CheckpointTuple(
            config={"configurable": {**conf, "checkpoint_id": checkpoint_id}},
            checkpoint=checkpoint, metadata=self.serde.loads_typed((meta_kind, meta)),
            parent_config={"configurable": {**conf, "checkpoint_id": parent_id}}
            if parent_id else None,
            pending_writes=[(task, channel, self.serde.loads_typed((wkind, wbody)))
                            for task, channel, wkind, wbody in writes.fetchall()])

    def get_tuple(self: Any, config: Any) -> Any:
        found = rows(self, config, latest=not (config or {}).get("configurable", {}).get(
            "checkpoint_id"))
        return tuple_of(self, found[0]) if found else None

    def list_(self: Any, config: Any, **_: Any) -> Iterator[Any]:
        for row in rows(self, config, latest=False):
            yield tuple_of(self, row)

    cls.get_tuple, cls.list = get_tuple, list_


@handwritten(target="lg-async-sqlite-file", module=ASYNC_SQLITE,
             qualname="AsyncSqliteSaver.alist",
             defect="alist lists the checkpoints under the lock, then reads each one's writes "
                    "as the consumer reaches it, taking the lock per item: a write or a delete "
                    "waiting for the lock lands between two items")
def lg_async_sqlite_list_writes_per_item() -> None:
    cls = load_class(ASYNC_SQLITE, "AsyncSqliteSaver")
    original = cls.alist

    async def alist(self: Any, config: Any, **kwargs: Any) -> AsyncIterator[Any]:
        items = [item async for item in original(self, config, **kwargs)]
        for item in items:
            got = await self.aget_tuple(item.config)
            yield item._replace(pending_writes=got.pending_writes if got else [])

    cls.alist = alist
