"""User factories that take constructor options as keyword parameters (``*, ttl=None``): a
store whose history expires, one that ignores its ttl, and factories whose signatures offer
some options and not others."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from tests.userstore.stores import JsonFileSession


class ExpiringSession(JsonFileSession):
    """A JSON-file store whose session expires ``ttl`` seconds after its last write (wall
    clock, so that every instance on the file agrees); ``ttl=None`` keeps it for ever."""

    honour_ttl = True

    def __init__(self, session_id: str, path: Path, ttl: float | None = None) -> None:
        super().__init__(session_id, path)
        self.ttl = ttl
        self.deadlines = path.with_suffix(".expires")

    def _expired(self) -> bool:
        if not (self.honour_ttl and self.deadlines.exists()):
            return False
        return time.time() >= float(self.deadlines.read_text())

    def _load(self) -> dict[str, list[Any]]:
        data = super()._load()
        if self._expired():
            data.pop(self.session_id, None)
        return data

    def _save(self, data: dict[str, list[Any]]) -> None:
        super()._save(data)
        if self.ttl is not None:
            self.deadlines.write_text(repr(time.time() + self.ttl))


class TtlIgnoringSession(ExpiringSession):
    """The defect: takes a ttl and keeps the history for ever."""

    honour_ttl = False


def expiring_store(root: Path, session_id: str, *, ttl: float | None = None) -> ExpiringSession:
    """A factory that takes the ttl option by keyword."""
    return ExpiringSession(session_id, root / "store.json", ttl)


def ttl_ignoring_store(root: Path, session_id: str,
                       ttl: float | None = None) -> TtlIgnoringSession:
    """The same option as a positional-or-keyword parameter; the store ignores it."""
    return TtlIgnoringSession(session_id, root / "store.json", ttl)


def kwargs_store(root: Path, session_id: str, **options: Any) -> ExpiringSession:
    """Takes anything by ``**options``: that names no option, so none is assumed."""
    return ExpiringSession(session_id, root / "store.json", options.get("ttl"))


def many_options_store(root: Path, session_id: str, *, ttl: float | None = None,
                       encryption_key: str = "key-a", max_scan_items: int | None = None,
                       create_tables: bool = True,
                       messages_table: str = "messages") -> ExpiringSession:
    """Offers every option but sessions_table (only probed: its options are not all kept)."""
    return ExpiringSession(session_id, root / "store.json", ttl)


def required_option_store(root: Path, session_id: str, *, ttl: float) -> ExpiringSession:
    """A ttl without a default: the lane's own instance could not be built."""
    return ExpiringSession(session_id, root / "store.json", ttl)


class UnreadableSignature:
    """A factory whose signature cannot be read (as a C-implemented callable's)."""

    __signature__ = "not a signature"

    def __call__(self, root: Path, session_id: str) -> JsonFileSession:
        return JsonFileSession(session_id, root / "store.json")


unreadable_signature_store = UnreadableSignature()
