"""Hand-written mutants of the real savers for the API checks (ARIB-CKPT-008..012): our own
code installed over one method in a child process; nothing is written into site-packages."""

from __future__ import annotations

import asyncio
from typing import Any

from arib.mutants.base import handwritten, load_class

SQLITE = "langgraph.checkpoint.sqlite"
ASYNC_SQLITE = "langgraph.checkpoint.sqlite.aio"
ASYNC_POSTGRES = "langgraph.checkpoint.postgres.aio"

# The tables AsyncSqliteSaver.setup() makes in langgraph-checkpoint-sqlite 3.1 (a fresh store).
_SCHEMA = """
CREATE TABLE IF NOT EXISTS checkpoints (
    thread_id TEXT NOT NULL, checkpoint_ns TEXT NOT NULL DEFAULT '',
    checkpoint_id TEXT NOT NULL, parent_checkpoint_id TEXT, type TEXT,
    checkpoint BLOB, metadata BLOB,
    PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id));
CREATE TABLE IF NOT EXISTS writes (
    thread_id TEXT NOT NULL, checkpoint_ns TEXT NOT NULL DEFAULT '',
    checkpoint_id TEXT NOT NULL, task_id TEXT NOT NULL,
    task_path TEXT NOT NULL DEFAULT '', idx INTEGER NOT NULL,
    channel TEXT NOT NULL, type TEXT, value BLOB,
    PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id, task_id, idx));
"""


@handwritten(target="lg-async-sqlite-file", module=ASYNC_SQLITE,
             qualname="AsyncSqliteSaver.list",
             defect="the sync list() forwards to alist without the metadata filter: a sync "
                    "caller's filtered listing gives every checkpoint")
def lg_api_async_sqlite_list_drops_filter() -> None:
    cls = load_class(ASYNC_SQLITE, "AsyncSqliteSaver")
    original = cls.list

    def list_(self: Any, config: Any, *, filter: Any = None,  # noqa: A002
              before: Any = None, limit: Any = None) -> Any:
        return original(self, config, before=before, limit=limit)

    cls.list = list_


@handwritten(target="lg-sqlite-file", module=SQLITE, qualname="SqliteSaver.aput",
             defect="aput of a saver that serves only the sync half returns the config of the "
                    "checkpoint as if stored, and stores nothing")
def lg_api_sqlite_aput_pretends() -> None:
    cls = load_class(SQLITE, "SqliteSaver")

    async def aput(self: Any, config: Any, checkpoint: Any, metadata: Any,
                   new_versions: Any) -> Any:
        return {"configurable": {**config["configurable"], "checkpoint_id": checkpoint["id"]}}

    cls.aput = aput


@handwritten(target="lg-async-sqlite-file", module=ASYNC_SQLITE,
             qualname="AsyncSqliteSaver.get_tuple",
             defect="the sync get_tuple runs aget_tuple on the saver's loop without the guard: "
                    "called on that loop's thread it waits for itself forever")
def lg_api_async_sqlite_get_tuple_unguarded() -> None:
    cls = load_class(ASYNC_SQLITE, "AsyncSqliteSaver")

    def get_tuple(self: Any, config: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(self.aget_tuple(config), self.loop).result()

    cls.get_tuple = get_tuple


@handwritten(target="lg-async-sqlite-file", module=ASYNC_SQLITE,
             qualname="AsyncSqliteSaver.aget_delta_channel_history",
             defect="the delta history walks every older checkpoint of the namespace in id "
                    "order (alist before the target) instead of the parent chain: a fork's "
                    "sibling branch gives its writes and seeds")
def lg_api_async_sqlite_delta_walks_ids() -> None:
    cls = load_class(ASYNC_SQLITE, "AsyncSqliteSaver")

    async def aget_delta_channel_history(self: Any, *, config: Any, channels: Any) -> Any:
        if not channels:
            return {}
        target = await self.aget_tuple(config)
        if target is None:
            return {ch: {"writes": []} for ch in channels}
        conf = target.config["configurable"]
        scope = {"configurable": {"thread_id": conf["thread_id"],
                                  "checkpoint_ns": conf.get("checkpoint_ns", "")}}
        collected: dict[str, list[Any]] = {ch: [] for ch in channels}
        seeds: dict[str, Any] = {}
        remaining = set(channels)
        older = [t async for t in self.alist(scope, before=target.config)]
        for tup in older:
            if not remaining:
                break
            for write in reversed(tup.pending_writes or []):
                if write[1] in remaining:
                    collected[write[1]].append(write)
            for ch in list(remaining):
                if ch in tup.checkpoint["channel_values"]:
                    seeds[ch] = tup.checkpoint["channel_values"][ch]
                    remaining.discard(ch)
        result: dict[str, Any] = {}
        for ch in channels:
            result[ch] = {"writes": list(reversed(collected[ch]))}
            if ch in seeds:
                result[ch]["seed"] = seeds[ch]
        return result

    cls.aget_delta_channel_history = aget_delta_channel_history


@handwritten(target="lg-async-sqlite-file", module=ASYNC_SQLITE,
             qualname="AsyncSqliteSaver.setup",
             defect="setup() makes the tables but never adds task_path to a writes table made "
                    "by an older release: every put_writes on such a store fails")
def lg_api_async_sqlite_setup_skips_migration() -> None:
    cls = load_class(ASYNC_SQLITE, "AsyncSqliteSaver")

    async def setup(self: Any) -> None:
        async with self.lock:
            if self.is_setup:
                return
            await self.conn.executescript(_SCHEMA)
            await self.conn.commit()
            self.is_setup = True

    cls.setup = setup


@handwritten(target="lg-async-postgres", module=ASYNC_POSTGRES,
             qualname="AsyncPostgresSaver.aget_tuple",
             defect="aget_tuple gives every checkpoint, v4 ones too, its parent's TASKS writes "
                    "as pending sends: a v4 checkpoint gains sends that were already run")
def lg_api_async_postgres_sends_of_v4() -> None:
    cls = load_class(ASYNC_POSTGRES, "AsyncPostgresSaver")
    original = cls.aget_tuple

    async def aget_tuple(self: Any, config: Any) -> Any:
        found = await original(self, config)
        if found is None or found.parent_config is None or found.checkpoint.get("v", 0) < 4:
            return found
        parent = await original(self, found.parent_config)
        sends = [value for _, channel, value in (parent.pending_writes if parent else [])
                 if channel == "__pregel_tasks"]
        if not sends:
            return found
        values = {**found.checkpoint["channel_values"], "__pregel_tasks": sends}
        return found._replace(checkpoint={**found.checkpoint, "channel_values": values})

    cls.aget_tuple = aget_tuple
