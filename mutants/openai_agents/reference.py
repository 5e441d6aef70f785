"""Hand-written mutants of the reference backend: each models one integrity defect."""

from __future__ import annotations

import json
from typing import Any

import anyio

from arib.ground.model import Verdict
from arib.mutants.base import handwritten, load_class
from arib.targets.base import Claims

REF = "arib.targets.openai_agents.reference"


@handwritten(
    target="reference",
    module=REF,
    qualname="ReferenceSession.close",
    defect="racy close: state checked, then a yield, then the act; two racing closes both "
    "act and the second dereferences a connection the first released",
)
def reference_racy_close() -> None:
    cls = load_class(REF, "ReferenceSession")

    async def close(self: Any) -> None:
        if self._closed:
            return
        await anyio.sleep(0)
        self._conn.close()
        self._conn = None
        self._closed = True

    cls.close = close


@handwritten(
    target="reference",
    module=REF,
    qualname="ReferenceSession.add_items",
    defect="silent drop after close: a write to a closed session returns success and "
    "stores nothing",
)
def reference_silent_drop_after_close() -> None:
    cls = load_class(REF, "ReferenceSession")
    original = cls.add_items

    async def add_items(self: Any, items: list[Any]) -> None:
        if self._closed:
            return
        await original(self, items)

    cls.add_items = add_items


@handwritten(
    target="reference",
    module=REF,
    qualname="ReferenceSession.add_items",
    defect="persist-then-raise after close: a write to a closed session is committed "
    "through a new connection and then reported as refused",
)
def reference_persist_then_raise_after_close() -> None:
    import sqlite3

    cls = load_class(REF, "ReferenceSession")
    original = cls.add_items

    async def add_items(self: Any, items: list[Any]) -> None:
        if self._closed:
            conn = sqlite3.connect(self.db_path)
            with conn:
                for item in items:
                    conn.execute(
                        "INSERT INTO items (session_id, item_key, body) VALUES (?, NULL, ?)",
                        (self.session_id, json.dumps(item)),
                    )
            conn.close()
            raise RuntimeError("session is closed")
        await original(self, items)

    cls.add_items = add_items


@handwritten(
    target="reference",
    module=REF,
    qualname="ReferenceSession.add_items",
    defect="corrupted content: every stored item loses its last character of content",
)
def reference_corrupts_content() -> None:
    cls = load_class(REF, "ReferenceSession")
    original = cls.add_items

    async def add_items(self: Any, items: list[Any]) -> None:
        damaged = []
        for item in items:
            item = dict(item)
            if isinstance(item.get("content"), str):
                item["content"] = item["content"][:-1]
            damaged.append(item)
        await original(self, damaged)

    cls.add_items = add_items


@handwritten(
    target="reference",
    module=REF,
    qualname="ReferenceSession.get_items",
    defect="crash on read: a read raises once the session holds more than 50 items",
)
def reference_read_crashes() -> None:
    cls = load_class(REF, "ReferenceSession")
    original = cls.get_items

    async def get_items(self: Any, limit: int | None = None) -> list[Any]:
        items = await original(self, limit)
        if len(items) > 50:
            raise ValueError("row decode failed")
        return items

    cls.get_items = get_items


@handwritten(
    target="reference",
    module=REF,
    qualname="ReferenceSession.add_items",
    defect="lost update: the append reads the tail, yields, then writes under a stale "
    "position so a concurrent append overwrites it",
)
def reference_lost_update() -> None:
    cls = load_class(REF, "ReferenceSession")

    async def add_items(self: Any, items: list[Any]) -> None:
        conn = self._live()
        (last,) = conn.execute("SELECT COALESCE(MAX(seq), 0) FROM items").fetchone()
        await anyio.sleep(0)
        with conn:
            for offset, item in enumerate(items, start=1):
                conn.execute(
                    "INSERT OR REPLACE INTO items (seq, session_id, item_key, body) "
                    "VALUES (?, ?, ?, ?)",
                    (last + offset, self.session_id, self._key(item), json.dumps(item)),
                )

    cls.add_items = add_items


@handwritten(
    target="reference",
    module=REF,
    qualname="ReferenceSession.add_items",
    defect="no idempotency: a redelivered item with a stored id is appended again",
)
def reference_no_idempotency() -> None:
    cls = load_class(REF, "ReferenceSession")

    async def add_items(self: Any, items: list[Any]) -> None:
        async with self._lock:
            conn = self._live()
            with conn:
                for item in items:
                    conn.execute(
                        "INSERT INTO items (session_id, item_key, body) VALUES (?, NULL, ?)",
                        (self.session_id, json.dumps(item)),
                    )

    cls.add_items = add_items


@handwritten(
    target="reference",
    module=REF,
    qualname="ReferenceSession.add_items",
    defect="content-equality dedup: an item equal to a stored one is dropped, merging "
    "legitimately repeated messages",
)
def reference_content_dedup() -> None:
    cls = load_class(REF, "ReferenceSession")

    async def add_items(self: Any, items: list[Any]) -> None:
        async with self._lock:
            conn = self._live()
            with conn:
                for item in items:
                    body = json.dumps(item, sort_keys=True)
                    conn.execute(
                        "INSERT OR IGNORE INTO items (session_id, item_key, body) "
                        "VALUES (?, ?, ?)",
                        (self.session_id, body, json.dumps(item)),
                    )

    cls.add_items = add_items


@handwritten(
    target="reference",
    module=REF,
    qualname="ReferenceSession.close",
    defect="a missing close, honestly declared: the backend has no close() and says so; "
    "a close check must abstain, not pass",
    expected=Verdict.NOT_APPLICABLE,
    claims=Claims(has_close=False),
)
def reference_without_close() -> None:
    cls = load_class(REF, "ReferenceSession")
    del cls.close


@handwritten(
    target="reference",
    module=REF,
    qualname="ReferenceSession.close",
    defect="a false no-close claim: the adapter denies a close() the object has; the "
    "check must report a harness error naming the claim, not abstain",
    expected=Verdict.ERROR,
    claims=Claims(has_close=False),
)
def reference_false_no_close_claim() -> None:
    # The object is unchanged; only the adapter's claim is false.
    load_class(REF, "ReferenceSession")


@handwritten(
    target="reference",
    module=REF,
    qualname="ReferenceSession",
    defect="forced-broken: every operation raises; every check must be violated by it",
    forced=True,
)
def reference_forced_broken() -> None:
    cls = load_class(REF, "ReferenceSession")

    async def broken(self: Any, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("forced-broken mutant")

    for name in ("get_items", "add_items", "pop_item", "clear_session", "close", "ping",
                 "_get_compaction_snapshot"):
        setattr(cls, name, broken)
    # The advanced API (targets/openai_agents/reference_advanced.py) raises too.
    for name in ("create_branch_from_turn", "create_branch_from_content", "switch_to_branch",
                 "delete_branch", "list_branches", "store_run_usage", "get_session_usage",
                 "get_turn_usage", "get_tool_usage", "get_conversation_turns",
                 "find_turns_by_content", "get_conversation_by_turns"):
        setattr(cls, name, broken)
