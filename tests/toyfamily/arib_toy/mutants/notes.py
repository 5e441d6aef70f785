"""Hand-written mutants of the toy family: a lost update on each lane, and the forced-broken
mutant of its reference."""

from __future__ import annotations

import json
from typing import Any

import anyio

from arib.mutants.base import handwritten, load_class


@handwritten(target="toy-reference", module="arib_toy.reference",
             qualname="ReferenceNotes.add",
             defect="lost update: an append rewrites the table with what it read before it "
                    "yielded")
def toy_reference_lost_update() -> None:
    cls = load_class("arib_toy.reference", "ReferenceNotes")

    async def add(self: Any, notes: list[Any]) -> None:
        before = [body for (body,) in self._conn.execute("SELECT body FROM notes ORDER BY seq")]
        await anyio.sleep(0)
        with self._conn:
            self._conn.execute("DELETE FROM notes")
            self._conn.executemany("INSERT INTO notes (body) VALUES (?)",
                                   [(b,) for b in before] + [(json.dumps(n),) for n in notes])

    cls.add = add


@handwritten(target="notes-file", module="arib_toy.store", qualname="NoteStore.add",
             defect="lost update: an append without the lock writes back a stale list")
def toy_notes_lost_update() -> None:
    cls = load_class("arib_toy.store", "NoteStore")

    async def add(self: Any, notes: list[Any]) -> None:
        current = self._load()
        await anyio.sleep(0)
        self._save(current + list(notes))

    cls.add = add


@handwritten(target="toy-reference", module="arib_toy.reference",
             qualname="ReferenceNotes",
             defect="forced-broken: every operation raises; every check must be violated",
             forced=True)
def toy_reference_forced_broken() -> None:
    cls = load_class("arib_toy.reference", "ReferenceNotes")

    async def broken(self: Any, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("forced-broken mutant")

    cls.add = broken
    cls.read = broken
