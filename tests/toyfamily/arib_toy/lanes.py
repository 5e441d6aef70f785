"""The toy family's lanes: its reference, and the notes file."""

from __future__ import annotations

import importlib
from typing import Any

from arib.targets.base import BuildContext, Claims, Handle, TargetSpec


async def _build_notes(ctx: BuildContext) -> Handle:
    cls = importlib.import_module("arib_toy.store").NoteStore  # the (mutated) module now
    path = ctx.root / "notes.jsonl"

    async def reopen() -> Handle:
        return await _build_notes(ctx)

    async def dispose() -> None:
        return None

    return Handle(session=cls(path), reopen=reopen, dispose=dispose)


async def _build_reference(ctx: BuildContext) -> Handle:
    cls = importlib.import_module("arib_toy.reference").ReferenceNotes
    store = cls(ctx.root / "reference.db")

    async def reopen() -> Handle:
        return await _build_reference(ctx)

    async def dispose() -> None:
        store.dispose()

    return Handle(session=store, reopen=reopen, dispose=dispose)


async def read_notes(store: Any, limit: int | None = None) -> list[Any]:
    """How the family's checks read a store: ``read()``, which must give a list."""
    notes = await store.read(limit)
    if not isinstance(notes, list):
        raise TypeError(f"read() returned {type(notes).__name__}, not a list of notes")
    return notes


REFERENCE = TargetSpec(
    name="toy-reference", backend="ReferenceNotes", module="arib_toy.reference",
    claims=Claims(has_close=False), build=_build_reference,
    description="the toy family's reference: notes in an SQLite table", reference=True,
)
NOTES_FILE = TargetSpec(
    name="notes-file", backend="NoteStore", module="arib_toy.store",
    claims=Claims(has_close=False), build=_build_notes,
    description="NoteStore on a JSON-lines file",
)
LANES = (REFERENCE, NOTES_FILE)
SURVEY_LANES = (NOTES_FILE,)
