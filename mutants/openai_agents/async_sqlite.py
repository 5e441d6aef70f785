"""Hand-written mutants of AsyncSQLiteSession (overrides, our own code)."""

from __future__ import annotations

from typing import Any

import anyio

from arib.mutants.base import handwritten, load_class

ASYNC_SQLITE = "agents.extensions.memory.async_sqlite_session"


@handwritten(
    target="async-sqlite-file",
    module=ASYNC_SQLITE,
    qualname="AsyncSQLiteSession.get_items",
    defect="crash on read: a read raises once the session holds more than 50 items",
)
def async_sqlite_read_crashes() -> None:
    cls = load_class(ASYNC_SQLITE, "AsyncSQLiteSession")
    original = cls.get_items

    async def get_items(self: Any, limit: int | None = None) -> list[Any]:
        items = await original(self, limit)
        if len(items) > 50:
            raise ValueError("row decode failed")
        return items

    cls.get_items = get_items


@handwritten(
    target="async-sqlite-file",
    module=ASYNC_SQLITE,
    qualname="AsyncSQLiteSession.add_items",
    defect="duplicated append: an append that yields mid-way is written twice",
)
def async_sqlite_duplicates_on_yield() -> None:
    cls = load_class(ASYNC_SQLITE, "AsyncSQLiteSession")
    original = cls.add_items

    async def add_items(self: Any, items: list[Any]) -> None:
        calls = self.__dict__.setdefault("_arib_calls", [0])
        calls[0] += 1
        await original(self, items)
        if calls[0] % 7 == 0:
            await anyio.sleep(0)
            await original(self, items)

    cls.add_items = add_items
