"""Hand-written mutants of the real savers (InMemorySaver, SqliteSaver, AsyncSqliteSaver) for
the contract checks (ARIB-CKPT-002..007): our own code installed over one method in a child
process, calling the saver's original method; nothing is written into site-packages."""

from __future__ import annotations

from typing import Any

from arib.mutants.base import handwritten, load_class
from arib.mutants.langgraph._defects import namespace_prefix_list, special_kept_first

MEMORY = "langgraph.checkpoint.memory"
SQLITE = "langgraph.checkpoint.sqlite"
ASYNC_SQLITE = "langgraph.checkpoint.sqlite.aio"


def _without_id(config: Any) -> dict[str, Any]:
    conf = dict((config or {}).get("configurable", {}))
    conf.pop("checkpoint_id", None)
    return {"configurable": conf}


@handwritten(target="lg-sqlite-file", module=SQLITE, qualname="SqliteSaver.list",
             defect="list gives one checkpoint more than its limit")
def lg_contract_sqlite_limit_one_more() -> None:
    cls = load_class(SQLITE, "SqliteSaver")
    original = cls.list

    def list_(self: Any, config: Any, *, filter: Any = None,  # noqa: A002
              before: Any = None, limit: Any = None) -> Any:
        return original(self, config, filter=filter, before=before,
                        limit=None if limit is None else limit + 1)

    cls.list = list_


@handwritten(target="lg-async-sqlite-file", module=ASYNC_SQLITE, qualname="AsyncSqliteSaver.aput",
             defect="aput ignores the parent its config names: every checkpoint is a root")
def lg_contract_async_sqlite_parent_dropped() -> None:
    cls = load_class(ASYNC_SQLITE, "AsyncSqliteSaver")
    original = cls.aput

    async def aput(self: Any, config: Any, checkpoint: Any, metadata: Any,
                   new_versions: Any) -> Any:
        return await original(self, _without_id(config), checkpoint, metadata, new_versions)

    cls.aput = aput


@handwritten(target="lg-sqlite-file", module=SQLITE, qualname="SqliteSaver.put_writes",
             defect="a special channel keeps its first write: put_writes skips a special "
                    "channel the task already wrote, instead of overwriting it")
def lg_contract_sqlite_special_kept_first() -> None:
    cls = load_class(SQLITE, "SqliteSaver")
    cls.put_writes = special_kept_first(cls.put_writes)


@handwritten(target="lg-async-sqlite-file", module=ASYNC_SQLITE,
             qualname="AsyncSqliteSaver.aput_writes",
             defect="aput_writes stores the writes on the namespace's latest checkpoint, not "
                    "on the one its config names")
def lg_contract_async_sqlite_writes_to_latest() -> None:
    cls = load_class(ASYNC_SQLITE, "AsyncSqliteSaver")
    original = cls.aput_writes

    async def aput_writes(self: Any, config: Any, writes: Any, task_id: str,
                          task_path: str = "") -> None:
        latest = await self.aget_tuple(_without_id(config))
        await original(self, latest.config if latest else config, writes, task_id, task_path)

    cls.aput_writes = aput_writes


@handwritten(target="lg-memory", module=MEMORY, qualname="InMemorySaver.list",
             defect="a namespace matches by prefix: listing ns 'a' also gives 'a|b' and 'ab'")
def lg_contract_memory_ns_prefix_matches() -> None:
    import importlib

    module = importlib.import_module(MEMORY)
    cls = getattr(module, "InMemorySaver", None) or module.MemorySaver
    cls.list = namespace_prefix_list(cls.list)


@handwritten(target="lg-sqlite-file", module=SQLITE, qualname="SqliteSaver.delete_thread",
             defect="delete_thread also deletes every thread whose id starts with the id given")
def lg_contract_sqlite_delete_prefix_threads() -> None:
    cls = load_class(SQLITE, "SqliteSaver")
    original = cls.delete_thread

    def delete_thread(self: Any, thread_id: str) -> None:
        threads = {str(t.config["configurable"]["thread_id"]) for t in self.list(None)}
        for other in sorted(threads):
            if other.startswith(str(thread_id)):
                original(self, other)

    cls.delete_thread = delete_thread
