"""Hand-written mutants of our reference checkpointer for the API checks (ARIB-CKPT-008..012):
each one plausible defect of a checkpointer's wider interface (the two halves, delta
histories, prune, the first call on a store), in our own code."""

from __future__ import annotations

import asyncio
import importlib
from typing import Any

from arib.mutants.base import handwritten, load_class

MODULE = "arib.targets.langgraph.reference"


@handwritten(target="lg-reference", module=MODULE, qualname="ReferenceSaver.alist",
             defect="alist forwards to list without its limit: the async half lists every "
                    "checkpoint where the sync half gives the first N")
def lg_api_reference_alist_drops_limit() -> None:
    cls = load_class(MODULE, "ReferenceSaver")

    async def alist(self: Any, config: Any, *, filter: Any = None,  # noqa: A002
                    before: Any = None, limit: Any = None) -> Any:
        for item in self.list(config, filter=filter, before=before):
            yield item

    cls.alist = alist


@handwritten(target="lg-reference", module=MODULE, qualname="ReferenceSaver.get_tuple",
             defect="get_tuple is served through the event loop the saver was made on, as the "
                    "async savers serve their sync half, without their guard: called on that "
                    "loop's thread it waits for the loop it blocks, forever")
def lg_api_reference_sync_read_waits_on_loop() -> None:
    cls = load_class(MODULE, "ReferenceSaver")
    init, read = cls.__init__, cls.get_tuple

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        try:
            self.arib_loop = asyncio.get_running_loop()
        except RuntimeError:
            self.arib_loop = None

    async def on_loop(self: Any, config: Any) -> Any:
        return read(self, config)

    def get_tuple(self: Any, config: Any) -> Any:
        if self.arib_loop is None:
            return read(self, config)
        return asyncio.run_coroutine_threadsafe(on_loop(self, config), self.arib_loop).result()

    cls.__init__ = __init__
    cls.get_tuple = get_tuple
    cls.aget_tuple = on_loop


@handwritten(target="lg-reference", module=MODULE,
             qualname="ReferenceSaver.get_delta_channel_history",
             defect="a config naming no checkpoint gives empty delta histories (the target is "
                    "looked up by an empty id instead of the thread's latest), as "
                    "InMemorySaver did before langgraph-checkpoint 4.3")
def lg_api_reference_delta_latest_empty() -> None:
    cls = load_class(MODULE, "ReferenceSaver")
    sync_history = getattr(cls, "get_delta_channel_history", None)
    async_history = getattr(cls, "aget_delta_channel_history", None)
    if sync_history is None or async_history is None:
        return  # a release before delta histories: nothing to break

    def empty(config: Any, channels: Any) -> Any:
        if (config.get("configurable") or {}).get("checkpoint_id"):
            return None
        return {ch: {"writes": []} for ch in channels}

    def get_delta_channel_history(self: Any, *, config: Any, channels: Any) -> Any:
        found = empty(config, channels)
        return found if found is not None else sync_history(self, config=config,
                                                            channels=channels)

    async def aget_delta_channel_history(self: Any, *, config: Any, channels: Any) -> Any:
        found = empty(config, channels)
        return found if found is not None else await async_history(
            self, config=config, channels=channels)

    cls.get_delta_channel_history = get_delta_channel_history
    cls.aget_delta_channel_history = aget_delta_channel_history


@handwritten(target="lg-reference", module=MODULE, qualname="HEADS_SQL",
             defect="keep_latest keeps each namespace's oldest checkpoint (the smallest id) "
                    "instead of its latest")
def lg_api_reference_prune_keeps_oldest() -> None:
    module: Any = importlib.import_module(MODULE)
    module.HEADS_SQL = module.HEADS_SQL.replace("MAX(checkpoint_id)", "MIN(checkpoint_id)")


@handwritten(target="lg-reference", module=MODULE,
             qualname="ReferenceSaver._refuse_delta_threads",
             defect="keep_latest prunes a thread that uses a DeltaChannel: the ancestors its "
                    "latest value is rebuilt from are deleted")
def lg_api_reference_prune_ignores_delta() -> None:
    cls = load_class(MODULE, "ReferenceSaver")

    def _refuse_delta_threads(self: Any, threads: Any) -> None:
        return None

    cls._refuse_delta_threads = _refuse_delta_threads


@handwritten(target="lg-reference", module=MODULE, qualname="make_tables",
             defect="the tables are made by the first write only: a read, a listing or a "
                    "delete as the first call on a fresh store fails with 'no such table'")
def lg_api_reference_tables_on_first_write() -> None:
    module: Any = importlib.import_module(MODULE)
    make = module.make_tables
    cls = module.ReferenceSaver
    put, put_writes = cls.put, cls.put_writes

    def no_tables(conn: Any) -> None:
        return None

    def put_(self: Any, *args: Any, **kwargs: Any) -> Any:
        make(self._conn)
        return put(self, *args, **kwargs)

    def put_writes_(self: Any, *args: Any, **kwargs: Any) -> Any:
        make(self._conn)
        return put_writes(self, *args, **kwargs)

    module.make_tables = no_tables
    cls.put, cls.put_writes = put_, put_writes_


@handwritten(target="lg-reference", module=MODULE, qualname="ReferenceSaver.delete_thread",
             defect="delete_thread looks the thread up first and raises KeyError for a thread "
                    "with no checkpoint (never written, or already deleted)")
def lg_api_reference_delete_unknown_raises() -> None:
    cls = load_class(MODULE, "ReferenceSaver")
    original = cls.delete_thread

    def delete_thread(self: Any, thread_id: str) -> None:
        if not list(self.list({"configurable": {"thread_id": str(thread_id)}}, limit=1)):
            raise KeyError(thread_id)
        original(self, thread_id)

    cls.delete_thread = delete_thread


@handwritten(target="lg-reference", module=MODULE, qualname="ReferenceSaver._legacy_sends",
             defect="a checkpoint of the format before v4 is read without the pending sends its "
                    "parent's TASKS writes hold: a resumed run never runs those branches")
def lg_api_reference_sends_not_migrated() -> None:
    cls = load_class(MODULE, "ReferenceSaver")

    def _legacy_sends(self: Any, thread_id: str, ns: str, parent_id: str) -> list[Any]:
        return []

    cls._legacy_sends = _legacy_sends
