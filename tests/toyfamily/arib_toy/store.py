"""The toy family's backend: a notes file, one JSON document per line."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import anyio


class NoteStore:
    """Appends notes to a file; appends from concurrent tasks are serialized by a lock."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = anyio.Lock()

    async def add(self, notes: list[Any]) -> None:
        """Append ``notes`` after every note already stored."""
        async with self._lock:
            current = self._load()
            await anyio.sleep(0)  # a suspension: another task runs here
            current.extend(notes)
            self._save(current)

    async def read(self, limit: int | None = None) -> list[Any]:
        """Every note in order, or the newest ``limit``."""
        notes = self._load()
        if limit is not None and limit < len(notes):
            return notes[len(notes) - limit:]
        return notes

    def _load(self) -> list[Any]:
        if not self.path.exists():
            return []
        return [json.loads(line) for line in self.path.read_text().splitlines() if line]

    def _save(self, notes: list[Any]) -> None:
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text("".join(json.dumps(n) + "\n" for n in notes))
        os.replace(tmp, self.path)
