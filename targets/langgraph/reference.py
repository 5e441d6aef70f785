"""Our reference checkpointer: every contract of a LangGraph checkpointer, kept the plain way.

One SQLite file holds the checkpoints and the pending writes; every operation is one
transaction under the instance's lock, made durable before it returns (``synchronous=FULL``),
and the async methods run the same code without ever suspending, so that a task cancelled
around one of them leaves all of it or none. Values go through the saver's serializer
(``serde.dumps_typed``), so a round trip gives back exactly what was put; a checkpoint of the
format before v4 gets its pending sends from its parent's TASKS writes, as the Postgres savers
read them. Slow and obviously right, as a reference should be: the bench's verdicts on the real
savers are compared with it.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import langgraph.checkpoint.base as _base
import langgraph.checkpoint.serde.types as _types
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
)

PRUNE_STRATEGIES = ("keep_latest", "delete")
# What keep_latest keeps of a thread: each namespace's latest checkpoint.
HEADS_SQL = ("SELECT ns, MAX(checkpoint_id) FROM ref_checkpoints WHERE thread_id = ? "
             "GROUP BY ns")
# Checkpoints of a format before this keep their pending sends as their parent's writes to
# TASKS; read back, the sends are moved into the TASKS channel (as the Postgres savers do).
LEGACY_BEFORE = 4
# The channel of pending sends; langgraph-checkpoint 1.0.1 does not name it (langgraph's own
# constants do, with this value), and a v1 checkpoint's reader migrates its sends there.
TASKS: str = getattr(_types, "TASKS", "__pregel_tasks")
# Metadata keys a DeltaChannel leaves on a thread's checkpoints (langgraph-checkpoint 4.1+).
DELTA_METADATA_KEYS = frozenset({"counters_since_delta_snapshot", "delta_writes_versioned"})

# The special channels whose writes keep one slot each (error, interrupt, ...), as the installed
# release defines them; a release without WRITES_IDX_MAP (langgraph-checkpoint 1.0.1) has none:
# every write there keeps its own index, as its savers store it.
WRITES_IDX_MAP: dict[str, int] = dict(getattr(_base, "WRITES_IDX_MAP", {}))


def _target(config: Any) -> tuple[str, str, str | None]:
    """(thread id, namespace, checkpoint id or None) named by a config."""
    conf = (config or {}).get("configurable", {})
    return str(conf["thread_id"]), str(conf.get("checkpoint_ns", "")), conf.get("checkpoint_id")


def _config(thread_id: str, ns: str, checkpoint_id: str) -> RunnableConfig:
    return {"configurable": {"thread_id": thread_id, "checkpoint_ns": ns,
                             "checkpoint_id": checkpoint_id}}


def open_file(path: str | Path) -> sqlite3.Connection:
    """A connection to ``path``: autocommit, any thread, durable commits."""
    conn = sqlite3.connect(str(path), check_same_thread=False, timeout=30.0,
                           isolation_level=None)
    conn.execute("PRAGMA synchronous=FULL")
    return conn


def make_tables(conn: sqlite3.Connection) -> None:
    """The checkpoints and writes tables, made unless they exist: every instance runs this
    when it opens its file, so instances opening one store at once, or a restart, succeed."""
    conn.executescript("""
CREATE TABLE IF NOT EXISTS ref_checkpoints (
    thread_id TEXT NOT NULL, ns TEXT NOT NULL, checkpoint_id TEXT NOT NULL,
    parent_id TEXT, kind TEXT NOT NULL, body BLOB NOT NULL,
    meta_kind TEXT NOT NULL, meta BLOB NOT NULL,
    PRIMARY KEY (thread_id, ns, checkpoint_id));
CREATE TABLE IF NOT EXISTS ref_writes (
    thread_id TEXT NOT NULL, ns TEXT NOT NULL, checkpoint_id TEXT NOT NULL,
    task_id TEXT NOT NULL, idx INTEGER NOT NULL, channel TEXT NOT NULL,
    kind TEXT NOT NULL, body BLOB NOT NULL, task_path TEXT NOT NULL,
    PRIMARY KEY (thread_id, ns, checkpoint_id, task_id, idx));
""")


class ReferenceSaver(BaseCheckpointSaver):  # type: ignore[type-arg]
    """A checkpointer on one SQLite file, serialized by a lock, durable on return."""

    def __init__(self, path: str | Path, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.path = str(path)
        self._lock = threading.Lock()
        self._conn = open_file(self.path)
        make_tables(self._conn)

    def dispose(self) -> None:
        """Close the file (the saver's owner does this; the saver claims no close())."""
        with self._lock:
            self._conn.close()

    @classmethod
    @contextmanager
    def from_conn_string(cls, conn_string: str) -> Iterator[ReferenceSaver]:
        """A saver on the file ``conn_string``, disposed on exit once the operation in flight
        (if any) returned; every operation after exit raises (the file is closed)."""
        saver = cls(conn_string)
        try:
            yield saver
        finally:
            saver.dispose()

    # ------------------------------------------------------------------ reads

    def _tuple(self, row: Sequence[Any]) -> CheckpointTuple:
        thread_id, ns, checkpoint_id, parent_id, kind, body, meta_kind, meta = row
        writes = self._conn.execute(
            # writes_sort_key order: (task_path, task_id, idx), the order a superstep
            # applies its tasks' writes in (one task_path: the older (task_id, idx) order)
            "SELECT task_id, channel, kind, body FROM ref_writes WHERE thread_id = ? AND "
            "ns = ? AND checkpoint_id = ? ORDER BY task_path, task_id, idx",
            (thread_id, ns, checkpoint_id)).fetchall()
        checkpoint = self.serde.loads_typed((kind, body))
        sends = self._legacy_sends(thread_id, ns, parent_id) if (
            parent_id and checkpoint.get("v", 0) < LEGACY_BEFORE) else []
        if sends:
            versions = dict(checkpoint["channel_versions"])
            versions[TASKS] = (max(versions.values()) if versions
                               else self.get_next_version(None, None))
            checkpoint = {**checkpoint, "channel_versions": versions,
                          "channel_values": {**checkpoint["channel_values"], TASKS: sends}}
        return CheckpointTuple(
            config=_config(thread_id, ns, checkpoint_id),
            checkpoint=checkpoint,
            metadata=self.serde.loads_typed((meta_kind, meta)),
            parent_config=_config(thread_id, ns, parent_id) if parent_id else None,
            pending_writes=[(task, channel, self.serde.loads_typed((wkind, wbody)))
                            for task, channel, wkind, wbody in writes],
        )

    def _legacy_sends(self, thread_id: str, ns: str, parent_id: str) -> list[Any]:
        """The pending sends of a checkpoint of the format before v4: its parent's TASKS
        writes, in writes_sort_key order (where older releases kept them)."""
        return [self.serde.loads_typed((kind, body)) for kind, body in self._conn.execute(
            "SELECT kind, body FROM ref_writes WHERE thread_id = ? AND ns = ? AND "
            "checkpoint_id = ? AND channel = ? ORDER BY task_path, task_id, idx",
            (thread_id, ns, parent_id, TASKS))]

    def get_tuple(self, config: Any) -> CheckpointTuple | None:
        """The checkpoint the config names, or the thread's latest in its namespace."""
        thread_id, ns, checkpoint_id = _target(config)
        query = ("SELECT * FROM ref_checkpoints WHERE thread_id = ? AND ns = ? "
                 + ("AND checkpoint_id = ?" if checkpoint_id else
                    "ORDER BY checkpoint_id DESC LIMIT 1"))
        args = (thread_id, ns, checkpoint_id) if checkpoint_id else (thread_id, ns)
        with self._lock:
            self._conn.execute("BEGIN")
            try:
                row = self._conn.execute(query, args).fetchone()
                return None if row is None else self._tuple(row)
            finally:
                self._conn.execute("COMMIT")

    def list(self, config: Any, *, filter: dict[str, Any] | None = None,  # noqa: A002
             before: Any = None, limit: int | None = None) -> Iterator[CheckpointTuple]:
        """Checkpoints newest first: of one thread (and namespace, and id) when the config
        names them, older than ``before``, whose metadata has every ``filter`` pair."""
        conf = (config or {}).get("configurable", {})
        where, args = [], []
        for column, key in (("thread_id", "thread_id"), ("ns", "checkpoint_ns"),
                            ("checkpoint_id", "checkpoint_id")):
            if conf.get(key) is not None:
                where.append(f"{column} = ?")
                args.append(str(conf[key]))
        before_id = _target(before)[2] if before is not None else None
        if before_id is not None:
            where.append("checkpoint_id < ?")
            args.append(before_id)
        query = ("SELECT * FROM ref_checkpoints" + (" WHERE " + " AND ".join(where) if where
                                                   else "") + " ORDER BY checkpoint_id DESC")
        with self._lock:
            self._conn.execute("BEGIN")
            try:
                rows = [self._tuple(row) for row in self._conn.execute(query, args).fetchall()]
            finally:
                self._conn.execute("COMMIT")
        wanted = dict(filter or {})
        metas = [dict(t.metadata) for t in rows]
        found = [t for t, meta in zip(rows, metas, strict=True)
                 if all(k in meta and meta[k] == v for k, v in wanted.items())]
        yield from (found if limit is None else found[:limit])

    # ------------------------------------------------------------------ writes

    def put(self, config: Any, checkpoint: Checkpoint, metadata: CheckpointMetadata,
            new_versions: ChannelVersions) -> RunnableConfig:
        """Store a checkpoint whose parent is the one the config names; its config back."""
        thread_id, ns, parent_id = _target(config)
        kind, body = self.serde.dumps_typed(checkpoint)
        meta_kind, meta = self.serde.dumps_typed(dict(metadata))
        with self._lock, self._conn:
            self._conn.execute("BEGIN IMMEDIATE")
            self._conn.execute(
                "INSERT OR REPLACE INTO ref_checkpoints VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (thread_id, ns, checkpoint["id"], parent_id, kind, body, meta_kind, meta))
        return _config(thread_id, ns, checkpoint["id"])

    def put_writes(self, config: Any, writes: Sequence[tuple[str, Any]], task_id: str,
                   task_path: str = "") -> None:
        """Store a task's writes to the checkpoint the config names: once per (task, idx);
        a special channel (error, interrupt, ...) overwrites its one slot."""
        thread_id, ns, checkpoint_id = _target(config)
        rows = []
        for idx, (channel, value) in enumerate(writes):
            kind, body = self.serde.dumps_typed(value)
            special = channel in WRITES_IDX_MAP
            rows.append((special, (thread_id, ns, checkpoint_id, task_id,
                                   WRITES_IDX_MAP.get(channel, idx), channel, kind, body,
                                   task_path)))
        with self._lock, self._conn:
            self._conn.execute("BEGIN IMMEDIATE")
            for special, row in rows:
                verb = "INSERT OR REPLACE" if special else "INSERT OR IGNORE"
                self._conn.execute(f"{verb} INTO ref_writes VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                                   row)

    def delete_thread(self, thread_id: str) -> None:
        """Remove every checkpoint and write of the thread, in every namespace."""
        with self._lock, self._conn:
            self._conn.execute("BEGIN IMMEDIATE")
            for table in ("ref_checkpoints", "ref_writes"):
                self._conn.execute(f"DELETE FROM {table} WHERE thread_id = ?", (str(thread_id),))

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """``delete``: remove every checkpoint and write of the threads. ``keep_latest``: keep
        each namespace's latest checkpoint and its writes (its parent link cleared, as its
        parent is gone), remove the rest; a thread whose metadata shows a DeltaChannel is
        refused (NotImplementedError) before anything is removed, as its latest value is
        rebuilt from the checkpoints before it. One transaction for all the threads."""
        if isinstance(thread_ids, str):
            raise TypeError("thread_ids must be a sequence of thread IDs, not a str")
        if strategy not in PRUNE_STRATEGIES:
            raise ValueError(f"unknown prune strategy {strategy!r}: one of {PRUNE_STRATEGIES}")
        threads = [str(t) for t in thread_ids]
        with self._lock, self._conn:
            self._conn.execute("BEGIN IMMEDIATE")
            if strategy == "keep_latest":
                self._refuse_delta_threads(threads)
            for thread in threads:
                if strategy == "delete":
                    for table in ("ref_checkpoints", "ref_writes"):
                        self._conn.execute(f"DELETE FROM {table} WHERE thread_id = ?",
                                           (thread,))
                    continue
                heads = self._conn.execute(HEADS_SQL, (thread,)).fetchall()
                for ns, head in heads:
                    for table in ("ref_checkpoints", "ref_writes"):
                        self._conn.execute(f"DELETE FROM {table} WHERE thread_id = ? AND ns = ? "
                                           f"AND checkpoint_id <> ?", (thread, ns, head))
                    self._conn.execute("UPDATE ref_checkpoints SET parent_id = NULL WHERE "
                                       "thread_id = ? AND ns = ?", (thread, ns))

    def _refuse_delta_threads(self, threads: Sequence[str]) -> None:
        """NotImplementedError naming the threads whose checkpoints' metadata has a
        DeltaChannel's keys (called inside prune's transaction)."""
        refused = set()
        for thread in threads:
            for meta_kind, meta in self._conn.execute(
                    "SELECT meta_kind, meta FROM ref_checkpoints WHERE thread_id = ?", (thread,)):
                if DELTA_METADATA_KEYS & set(self.serde.loads_typed((meta_kind, meta))):
                    refused.add(thread)
        if refused:
            raise NotImplementedError(f"keep_latest can't prune threads that use a "
                                      f"DeltaChannel: {', '.join(sorted(refused))}")

    # ------------------------------------------------------------------ async: the same,
    # never suspending, so a cancellation lands before or after an operation, never inside

    async def aget_tuple(self, config: Any) -> CheckpointTuple | None:
        """``get_tuple``."""
        return self.get_tuple(config)

    async def alist(self, config: Any, *, filter: dict[str, Any] | None = None,  # noqa: A002
                    before: Any = None, limit: int | None = None
                    ) -> AsyncIterator[CheckpointTuple]:
        """``list``."""
        for item in self.list(config, filter=filter, before=before, limit=limit):
            yield item

    async def aput(self, config: Any, checkpoint: Checkpoint, metadata: CheckpointMetadata,
                   new_versions: ChannelVersions) -> RunnableConfig:
        """``put``."""
        return self.put(config, checkpoint, metadata, new_versions)

    async def aput_writes(self, config: Any, writes: Sequence[tuple[str, Any]], task_id: str,
                          task_path: str = "") -> None:
        """``put_writes``."""
        self.put_writes(config, writes, task_id, task_path)

    async def adelete_thread(self, thread_id: str) -> None:
        """``delete_thread``."""
        self.delete_thread(thread_id)

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """``prune``."""
        self.prune(thread_ids, strategy=strategy)
