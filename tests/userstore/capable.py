"""Stores that differ in what they offer beyond the Session protocol (a close(), branch
methods), one that lies about it, and one whose capability cannot be read."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from arib.api import lane
from tests.userstore.stores import JsonFileSession


class ClosingSession(JsonFileSession):
    """A store whose close() ends the session: every call after it raises."""

    closed = False

    def close(self) -> None:
        """End the session (closing twice is fine)."""
        self.closed = True

    def _live(self) -> None:
        if self.closed:
            raise RuntimeError("session is closed")

    async def get_items(self, limit: int | None = None) -> list[Any]:
        self._live()
        return await super().get_items(limit)

    async def add_items(self, items: list[Any]) -> None:
        self._live()
        await super().add_items(items)

    async def pop_item(self) -> Any | None:
        self._live()
        return await super().pop_item()

    async def clear_session(self) -> None:
        self._live()
        await super().clear_session()


class AsyncClosingSession(ClosingSession):
    """The same, with an async close()."""

    async def close(self) -> None:  # type: ignore[override]
        """End the session."""
        self.closed = True


class LeakyCloseSession(JsonFileSession):
    """close() that ends nothing: a write after close() is accepted silently."""

    def close(self) -> None:
        """Releases nothing and refuses nothing afterwards (the defect)."""


class UnreadableBranches(JsonFileSession):
    """A store whose branch API cannot even be looked up: the attribute raises."""

    @property
    def create_branch_from_turn(self) -> Any:
        """Raises on access, as a lazily bound table that is missing would."""
        raise RuntimeError("branch table unreadable")


def closing_store(root: Path, session_id: str) -> ClosingSession:
    """A bare factory: its close() is found on the object."""
    return ClosingSession(session_id, root / "store.json")


def async_closing_store(root: Path, session_id: str) -> AsyncClosingSession:
    """A bare factory whose session's close() is async."""
    return AsyncClosingSession(session_id, root / "store.json")


@lane(has_close=True)
def leaky_close_store(root: Path, session_id: str) -> LeakyCloseSession:
    """Declares its close(); the close checks run by default and find the defect."""
    return LeakyCloseSession(session_id, root / "store.json")


@lane(has_close=True)
def lying_store(root: Path, session_id: str) -> JsonFileSession:
    """Declares a close() its session does not have: a contradicted claim."""
    return JsonFileSession(session_id, root / "store.json")


def unreadable_store(root: Path, session_id: str) -> UnreadableBranches:
    """A store whose branch capability probe raises."""
    return UnreadableBranches(session_id, root / "store.json")


@lane(close_is_terminal=False, close_note="close() only flushes a cache; the store documents "
      "that the session stays usable")
def flushing_store(root: Path, session_id: str) -> LeakyCloseSession:
    """States that close() does not end the session (true here: reads work after it)."""
    return LeakyCloseSession(session_id, root / "store.json")
