"""Hand-written mutants that only concurrency shows (ARIB-LGCONC-001, -002): writes filed
under the wrong checkpoint when another writer put in between. Our own code, installed over a
saver's method in the child process."""

from __future__ import annotations

from typing import Any

from arib.mutants.base import handwritten, load_class

REFERENCE = "arib.targets.langgraph.reference"
SQLITE = "langgraph.checkpoint.sqlite"
ASYNC_SQLITE = "langgraph.checkpoint.sqlite.aio"


def _latest_config(config: Any) -> dict[str, Any]:
    """The config with its checkpoint id dropped: it names the thread's latest checkpoint."""
    conf = dict(config.get("configurable", {}))
    conf.pop("checkpoint_id", None)
    return {"configurable": conf}


def _writes_to_latest(module: str, name: str) -> None:
    """Install over ``name.put_writes`` (a sync saver): the writes go to the latest."""
    cls = load_class(module, name)
    original = cls.put_writes

    def put_writes(self: Any, config: Any, writes: Any, task_id: str,
                   task_path: str = "") -> None:
        latest = self.get_tuple(_latest_config(config))
        original(self, latest.config if latest else config, writes, task_id, task_path)

    cls.put_writes = put_writes


@handwritten(target="lg-reference", module=REFERENCE, qualname="ReferenceSaver.put_writes",
             defect="put_writes files the writes under the checkpoint of the instance's last "
                    "put (shared state), not the one its config names")
def lg_reference_writes_follow_last_put() -> None:
    cls = load_class(REFERENCE, "ReferenceSaver")
    put, put_writes = cls.put, cls.put_writes

    def remembering_put(self: Any, config: Any, *args: Any) -> Any:
        result = put(self, config, *args)
        self._last_put = result
        return result

    def misfiled_writes(self: Any, config: Any, writes: Any, task_id: str,
                        task_path: str = "") -> None:
        put_writes(self, getattr(self, "_last_put", config), writes, task_id, task_path)

    cls.put, cls.put_writes = remembering_put, misfiled_writes


@handwritten(target="lg-async-sqlite-file", module=ASYNC_SQLITE,
             qualname="AsyncSqliteSaver.aput_writes",
             defect="aput_writes files the writes under the thread's latest checkpoint, not "
                    "the one its config names (racing puts move the latest)")
def lg_async_sqlite_writes_to_latest() -> None:
    cls = load_class(ASYNC_SQLITE, "AsyncSqliteSaver")
    original = cls.aput_writes

    async def aput_writes(self: Any, config: Any, writes: Any, task_id: str,
                          task_path: str = "") -> None:
        latest = await self.aget_tuple(_latest_config(config))
        await original(self, latest.config if latest else config, writes, task_id, task_path)

    cls.aput_writes = aput_writes


@handwritten(target="lg-sqlite-file", module=SQLITE, qualname="SqliteSaver.put_writes",
             defect="put_writes files the writes under the thread's latest checkpoint, not the "
                    "one its config names (racing puts move the latest)")
def lg_sqlite_writes_to_latest() -> None:
    _writes_to_latest(SQLITE, "SqliteSaver")


@handwritten(target="lg-reference", module=REFERENCE, qualname="ReferenceSaver.put_writes",
             defect="put_writes files the writes under the thread's latest checkpoint in the "
                    "store, not the one its config names (other processes move the latest)")
def lg_reference_writes_to_latest() -> None:
    _writes_to_latest(REFERENCE, "ReferenceSaver")
