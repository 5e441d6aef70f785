"""Hand-written mutants of the reference backend for the server-lane checks (our own code)."""

from __future__ import annotations

import sqlite3
from typing import Any

from arib.mutants.base import handwritten, load_class

REF = "arib.targets.openai_agents.reference"


@handwritten(
    target="reference",
    module=REF,
    qualname="ReferenceSession.ping",
    defect="optimistic ping: answers True without asking the store, so a store that is down "
    "looks healthy",
)
def reference_ping_always_true() -> None:
    cls = load_class(REF, "ReferenceSession")

    async def ping(self: Any) -> bool:
        async with self._lock:
            self._live()
            return True

    cls.ping = ping


@handwritten(
    target="reference",
    module=REF,
    qualname="ReferenceSession.ping",
    defect="ping lets the store's error escape: a store that is down makes ping() raise "
    "instead of answering False",
)
def reference_ping_raises_when_down() -> None:
    from urllib.parse import quote

    cls = load_class(REF, "ReferenceSession")

    async def ping(self: Any) -> bool:
        async with self._lock:
            self._live()
            probe = sqlite3.connect(f"file:{quote(self.db_path)}?mode=ro", uri=True)
            try:
                probe.execute("SELECT count(*) FROM sqlite_master").fetchone()
            finally:
                probe.close()
            return True

    cls.ping = ping


@handwritten(
    target="reference",
    module=REF,
    qualname="ReferenceSession.ping",
    defect="ping ignores close: a closed session still answers True instead of refusing",
)
def reference_ping_after_close_answers() -> None:
    from urllib.parse import quote

    cls = load_class(REF, "ReferenceSession")

    async def ping(self: Any) -> bool:
        try:
            probe = sqlite3.connect(f"file:{quote(self.db_path)}?mode=ro", uri=True)
            try:
                probe.execute("SELECT count(*) FROM sqlite_master").fetchone()
            finally:
                probe.close()
        except sqlite3.Error:
            return False
        return True

    cls.ping = ping


@handwritten(
    target="reference",
    module=REF,
    qualname="ReferenceSession.add_items",
    defect="a write outlives its caller: add_items hands the batch to a background task and a "
    "cancelled caller leaves it running, so the batch lands after the call ended",
)
def reference_add_after_cancel_lands_later() -> None:
    import asyncio

    cls = load_class(REF, "ReferenceSession")
    original = cls.add_items

    async def add_items(self: Any, items: list[Any]) -> None:
        async def later() -> None:
            await asyncio.sleep(0.05)
            await original(self, items)

        await asyncio.shield(asyncio.get_running_loop().create_task(later()))

    cls.add_items = add_items


@handwritten(
    target="reference",
    module=REF,
    qualname="ReferenceSession.pop_item",
    defect="blind retry of a pop: a pop interrupted after it removed the newest item removes "
    "another one before giving up, so an item is lost without being returned",
)
def reference_pop_takes_two_on_retry() -> None:
    import anyio

    cls = load_class(REF, "ReferenceSession")
    original = cls.pop_item

    async def pop_item(self: Any) -> Any:
        item = await original(self)
        try:
            await anyio.sleep(0.01)  # the reply on its way back to the caller
        except anyio.get_cancelled_exc_class():
            with anyio.CancelScope(shield=True):
                await original(self)
            raise
        return item

    cls.pop_item = pop_item


@handwritten(
    target="reference",
    module=REF,
    qualname="ReferenceSession.get_items",
    defect="limit 0 read as 'no limit': get_items(limit=0) returns the whole history",
)
def reference_limit_zero_means_no_limit() -> None:
    cls = load_class(REF, "ReferenceSession")
    original = cls.get_items

    async def get_items(self: Any, limit: int | None = None) -> list[Any]:
        return await original(self, None if limit == 0 else limit)  # type: ignore[no-any-return]

    cls.get_items = get_items


@handwritten(
    target="reference",
    module=REF,
    qualname="ReferenceSession.pop_item",
    defect="pop before the first write fails: pop_item() on a session this instance never "
    "wrote to raises 'unknown session' instead of returning None",
)
def reference_pop_on_new_store_raises() -> None:
    cls = load_class(REF, "ReferenceSession")
    original_add, original_pop = cls.add_items, cls.pop_item

    async def add_items(self: Any, items: list[Any]) -> None:
        self.__dict__["_arib_written"] = True
        await original_add(self, items)

    async def pop_item(self: Any) -> Any:
        if not self.__dict__.get("_arib_written"):
            raise LookupError(f"unknown session {self.session_id!r}")
        return await original_pop(self)

    cls.add_items = add_items
    cls.pop_item = pop_item


@handwritten(
    target="reference",
    module=REF,
    qualname="ReferenceSession.close",
    defect="close does not wait: close() releases the connection at once instead of taking "
    "the session lock, so calls already queued on the lock fail against a closed store",
)
def reference_close_does_not_wait() -> None:
    cls = load_class(REF, "ReferenceSession")

    async def close(self: Any) -> None:
        if self._closed:
            return
        self._closed = True
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()

    cls.close = close
