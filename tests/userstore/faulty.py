"""Factories a user gets wrong, and stores that hang or crash: each must become a finding."""

from __future__ import annotations

import os
import time
from pathlib import Path

from arib.api import lane
from tests.userstore.stores import JsonFileSession


class ClosableSession(JsonFileSession):
    """A store with a sync close()."""

    def close(self) -> None:
        """Nothing to release."""


class HangingSession(JsonFileSession):
    """add_items blocks the event loop's thread (a lock that is never released)."""

    async def add_items(self, items: list[object]) -> None:
        time.sleep(3600)


class CrashingSession(JsonFileSession):
    """add_items ends the process (a native extension's crash)."""

    async def add_items(self, items: list[object]) -> None:
        os._exit(3)


def raising_store(root: Path, session_id: str) -> JsonFileSession:
    """A factory that cannot make its store."""
    raise RuntimeError("cannot open the store")


def wrong_type_store(root: Path, session_id: str) -> object:
    """A factory that returns a path, not a session."""
    return root / "store.json"


@lane(has_close=False)
def denied_close_store(root: Path, session_id: str) -> ClosableSession:
    """Declares no close(), but its session has one: a false claim."""
    return ClosableSession(session_id, root / "store.json")


@lane(has_close=True, close_is_async=True)
def sync_close_store(root: Path, session_id: str) -> ClosableSession:
    """Claims an async close(), but close() is sync: a false claim."""
    return ClosableSession(session_id, root / "store.json")


@lane
def hanging_store(root: Path, session_id: str) -> HangingSession:
    """A store whose writes never return."""
    return HangingSession(session_id, root / "store.json")


@lane
def crashing_store(root: Path, session_id: str) -> CrashingSession:
    """A store whose first write kills the process."""
    return CrashingSession(session_id, root / "store.json")
