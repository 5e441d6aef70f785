"""Hand-written mutants that damage item content on the way in or out (ARIB-FIDELITY-001)."""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Callable
from typing import Any

from arib.mutants.base import handwritten, load_class

REF = "arib.targets.openai_agents.reference"
SQLITE = "agents.memory.sqlite_session"
ASYNC_SQLITE = "agents.extensions.memory.async_sqlite_session"
ADVANCED = "agents.extensions.memory.advanced_sqlite_session"
SQLALCHEMY = "agents.extensions.memory.sqlalchemy_session"


def _walk(value: Any, leaf: Callable[[Any], Any]) -> Any:
    """``value`` with ``leaf`` applied to every scalar (dict keys kept)."""
    if isinstance(value, dict):
        return {k: _walk(v, leaf) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_walk(v, leaf) for v in value]
    return leaf(value)


@handwritten(
    target="reference",
    module=REF,
    qualname="ReferenceSession.get_items",
    defect="Unicode normalization on read: every string comes back NFC-normalized, so "
    "decomposed combining marks are silently recomposed",
)
def reference_nfc_normalizes_text() -> None:
    cls = load_class(REF, "ReferenceSession")
    original = cls.get_items

    def nfc(value: Any) -> Any:
        return unicodedata.normalize("NFC", value) if isinstance(value, str) else value

    async def get_items(self: Any, limit: int | None = None) -> list[Any]:
        return [_walk(item, nfc) for item in await original(self, limit)]

    cls.get_items = get_items


@handwritten(
    target="reference",
    module=REF,
    qualname="ReferenceSession.add_items",
    defect="truncated body: strings longer than 64 KiB are cut to 64 KiB when stored",
)
def reference_truncates_long_strings() -> None:
    cls = load_class(REF, "ReferenceSession")
    original = cls.add_items

    def cut(value: Any) -> Any:
        return value[:65536] if isinstance(value, str) else value

    async def add_items(self: Any, items: list[Any]) -> None:
        await original(self, [_walk(item, cut) for item in items])

    cls.add_items = add_items


@handwritten(
    target="sqlite-file",
    module=SQLITE,
    qualname="SQLiteSession.get_items",
    defect="precision loss: integers come back through a double, so those beyond 2**53 are "
    "rounded",
)
def sqlite_big_ints_through_float() -> None:
    cls = load_class(SQLITE, "SQLiteSession")
    original = cls.get_items

    def through_float(value: Any) -> Any:
        if isinstance(value, int) and not isinstance(value, bool):
            return int(float(value))
        return value

    async def get_items(self: Any, limit: int | None = None) -> list[Any]:
        return [_walk(item, through_float) for item in await original(self, limit)]

    cls.get_items = get_items


@handwritten(
    target="advanced-sqlite-file",
    module=ADVANCED,
    qualname="AdvancedSQLiteSession.add_items",
    defect="exclude-none serialization: top-level fields whose value is null are dropped "
    "when stored",
)
def advanced_drops_null_fields() -> None:
    cls = load_class(ADVANCED, "AdvancedSQLiteSession")
    original = cls.add_items

    async def add_items(self: Any, items: list[Any]) -> None:
        slim = [{k: v for k, v in item.items() if v is not None} if isinstance(item, dict)
                else item for item in items]
        await original(self, slim)

    cls.add_items = add_items


@handwritten(
    target="async-sqlite-file",
    module=ASYNC_SQLITE,
    qualname="AsyncSQLiteSession.pop_item",
    defect="undecoded pop: pop_item returns the stored JSON text instead of the item",
)
def async_sqlite_pop_returns_json_text() -> None:
    cls = load_class(ASYNC_SQLITE, "AsyncSQLiteSession")
    original = cls.pop_item

    async def pop_item(self: Any) -> Any:
        item = await original(self)
        return None if item is None else json.dumps(item)

    cls.pop_item = pop_item


@handwritten(
    target="sqlalchemy-sqlite-file",
    module=SQLALCHEMY,
    qualname="SQLAlchemySession._serialize_item",
    defect="3-byte UTF-8 column: characters beyond the Basic Multilingual Plane (emoji, "
    "astral symbols) are stored as U+FFFD",
)
def sqlalchemy_replaces_astral_chars() -> None:
    cls = load_class(SQLALCHEMY, "SQLAlchemySession")

    async def _serialize_item(self: Any, item: Any) -> str:
        text = json.dumps(item, ensure_ascii=False, separators=(",", ":"))
        return "".join("\ufffd" if ord(ch) > 0xFFFF else ch for ch in text)

    cls._serialize_item = _serialize_item
