"""A user's own session stores, as someone outside this repo would write them.

``JsonFileSession`` keeps every session of a store in one JSON file. Its ``add_items`` reads
the file, changes the list and writes it back; the correct store does that with no ``await``
in between, so on one event loop nothing can come between the read and the write. The racy
store yields to the event loop between the read and the write (as a store that awaits a
network or a thread there would): two writers read the same list and the later write
overwrites the earlier one (a lost update).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from arib.api import lane


class JsonFileSession:
    """An openai-agents Session whose store is one JSON file: {session_id: [items]}."""

    yield_between_read_and_write = False

    def __init__(self, session_id: str, path: Path) -> None:
        self.session_id = session_id
        self.path = path

    def _load(self) -> dict[str, list[Any]]:
        if not self.path.exists():
            return {}
        return json.loads(self.path.read_text())  # type: ignore[no-any-return]

    def _save(self, data: dict[str, list[Any]]) -> None:
        scratch = self.path.with_suffix(".tmp")
        scratch.write_text(json.dumps(data))
        scratch.replace(self.path)

    async def get_items(self, limit: int | None = None) -> list[Any]:
        items = self._load().get(self.session_id, [])
        if limit is None:
            return items
        return items[-limit:] if limit > 0 else []

    async def add_items(self, items: list[Any]) -> None:
        data = self._load()
        if self.yield_between_read_and_write:
            await asyncio.sleep(0)
        data.setdefault(self.session_id, []).extend(items)
        self._save(data)

    async def pop_item(self) -> Any | None:
        data = self._load()
        items = data.get(self.session_id, [])
        if not items:
            return None
        item = items.pop()
        self._save(data)
        return item

    async def clear_session(self) -> None:
        data = self._load()
        data.pop(self.session_id, None)
        self._save(data)


class RacyJsonFileSession(JsonFileSession):
    """The same store, yielding between the read and the write of add_items."""

    yield_between_read_and_write = True


@lane
def json_store(root: Path, session_id: str) -> JsonFileSession:
    """The correct store: one JSON file under the trial's root."""
    return JsonFileSession(session_id, root / "store.json")


@lane
async def racy_store(root: Path, session_id: str) -> RacyJsonFileSession:
    """The racy store (an async factory, to show both kinds work)."""
    return RacyJsonFileSession(session_id, root / "store.json")
