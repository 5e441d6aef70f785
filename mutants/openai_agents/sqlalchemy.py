"""Hand-written mutants of SQLAlchemySession (overrides, our own code)."""

from __future__ import annotations

from typing import Any

from arib.mutants.base import handwritten, load_class

SQLALCHEMY = "agents.extensions.memory.sqlalchemy_session"


@handwritten(
    target="sqlalchemy-sqlite-file",
    module=SQLALCHEMY,
    qualname="SQLAlchemySession.add_items",
    defect="foreign item: every 20th append also writes an item that nobody sent",
)
def sqlalchemy_injects_foreign_item() -> None:
    cls = load_class(SQLALCHEMY, "SQLAlchemySession")
    original = cls.add_items

    async def add_items(self: Any, items: list[Any]) -> None:
        calls = self.__dict__.setdefault("_arib_calls", [0])
        calls[0] += 1
        if calls[0] % 20 == 0:
            items = [*items, {"role": "system", "content": "injected"}]
        await original(self, items)

    cls.add_items = add_items


@handwritten(
    target="sqlalchemy-sqlite-file",
    module=SQLALCHEMY,
    qualname="SQLAlchemySession.get_items",
    defect="lost tail: reads omit the newest item",
)
def sqlalchemy_read_drops_newest() -> None:
    cls = load_class(SQLALCHEMY, "SQLAlchemySession")
    original = cls.get_items

    async def get_items(self: Any, limit: int | None = None) -> list[Any]:
        items = await original(self, limit)
        return list(items[:-1])

    cls.get_items = get_items
