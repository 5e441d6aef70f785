"""The toy family's reference: notes in an SQLite table, appended in one transaction."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import anyio


class ReferenceNotes:
    """Every append is one INSERT transaction; a read returns the notes in insertion order."""

    def __init__(self, path: Path) -> None:
        self._conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self._conn.execute("CREATE TABLE IF NOT EXISTS notes "
                           "(seq INTEGER PRIMARY KEY AUTOINCREMENT, body TEXT NOT NULL)")

    async def add(self, notes: list[Any]) -> None:
        """Append ``notes`` atomically."""
        with self._conn:
            self._conn.executemany("INSERT INTO notes (body) VALUES (?)",
                                   [(json.dumps(n),) for n in notes])
        await anyio.sleep(0)

    async def read(self, limit: int | None = None) -> list[Any]:
        """Every note in order, or the newest ``limit``."""
        rows = self._conn.execute("SELECT body FROM notes ORDER BY seq").fetchall()
        notes = [json.loads(body) for (body,) in rows]
        return notes if limit is None else notes[max(len(notes) - limit, 0):]

    def dispose(self) -> None:
        self._conn.close()
