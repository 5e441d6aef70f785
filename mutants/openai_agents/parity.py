"""Mutants the parity gate is paired with: each makes ONE backend lane diverge.

A gate that no divergence can fail measures nothing, so the gate ships with mutants and must
fail on every one that is not marked equivalent (``tests/test_parity_mutants.py``). A mutant is
installed only in the forked child of the lanes of its target (and loop, when it names one), so
exactly one backend diverges while every other lane stays clean. The fault workflows' mutants
are in ``arib.mutants.openai_agents.parity_faults``; what a mutant is, in ``arib.mutants.parity``.

- hand-written mutants are overrides, our own code, patched onto the backend class;
- generated-style mutants are one textual edit of the installed module's source, served by the
  mutated-source import hook ``arib.mutants.hook.serve_mutated_module``; site-packages is never
  written.

Each is a ``MutantSpec`` in this module's ``PARITY_MUTANTS`` table, which the one catalogue
(``arib.mutants.registry.parity_mutants``) gathers apart from the hand-written mutants the
checks are paired with, so admission never pairs a check with one.

An *equivalent* mutant changes the storage but not what any read returns; the gate cannot and
must not fail on it. It is kept with its reason so that the blind spot is written down.
"""

from __future__ import annotations

import unicodedata
from typing import Any

from arib.mutants.base import MutantSpec
from arib.mutants.parity import backend, generated, handwritten
from arib.targets.openai_agents.sdk import (
    ADVANCED_SQLITE_MODULE,
    ASYNC_SQLITE_MODULE,
    SQLALCHEMY_MODULE,
    SQLITE_MODULE,
)

# --- hand-written overrides ------------------------------------------------------------------


def _sqlite_reversed_reads() -> None:
    cls = backend(SQLITE_MODULE, "SQLiteSession")
    original = cls.get_items

    async def get_items(self: Any, limit: int | None = None) -> list[Any]:
        return list(reversed(await original(self, limit)))

    cls.get_items = get_items


OUTPUT = "function_call_output"


def _async_sqlite_drops_tool_outputs() -> None:
    cls = backend(ASYNC_SQLITE_MODULE, "AsyncSQLiteSession")
    original = cls.add_items

    async def add_items(self: Any, items: list[Any]) -> None:
        kept = [i for i in items if not (isinstance(i, dict) and i.get("type") == OUTPUT)]
        await original(self, kept)

    cls.add_items = add_items


def _nfc(value: Any) -> Any:
    if isinstance(value, str):
        return unicodedata.normalize("NFC", value)
    if isinstance(value, list):
        return [_nfc(v) for v in value]
    if isinstance(value, dict):
        return {k: _nfc(v) for k, v in value.items()}
    return value


def _advanced_nfc_serialization() -> None:
    cls = backend(ADVANCED_SQLITE_MODULE, "AdvancedSQLiteSession")
    original = cls.add_items

    async def add_items(self: Any, items: list[Any]) -> None:
        await original(self, [_nfc(i) for i in items])

    cls.add_items = add_items


PARITY_MUTANTS: tuple[MutantSpec, ...] = (
    handwritten(
        "parity_sqlite_reversed_reads",
        "sqlite-file",
        SQLITE_MODULE,
        "SQLiteSession.get_items",
        "reversed ordering: get_items returns the history newest first",
        _sqlite_reversed_reads,
    ),
    handwritten(
        "parity_async_sqlite_drops_tool_outputs",
        "async-sqlite-file",
        ASYNC_SQLITE_MODULE,
        "AsyncSQLiteSession.add_items",
        "dropped item: every function_call_output is silently not stored",
        _async_sqlite_drops_tool_outputs,
    ),
    handwritten(
        "parity_advanced_nfc_serialization",
        "advanced-sqlite-file",
        ADVANCED_SQLITE_MODULE,
        "AdvancedSQLiteSession.add_items",
        "changed serialization: strings are stored Unicode-NFC-normalized (e + U+0301 -> é)",
        _advanced_nfc_serialization,
    ),
    generated(
        "parity_sqlite_order_desc",
        "sqlite-file",
        SQLITE_MODULE,
        "SQLiteSession.get_items",
        "generated ORDER BY flip: an unlimited get_items reads newest first",
        "ORDER BY id ASC",
        "ORDER BY id DESC",
    ),
    generated(
        "parity_sqlalchemy_id_desc",
        "sqlalchemy-sqlite-file",
        SQLALCHEMY_MODULE,
        "SQLAlchemySession.get_items",
        "generated tie-break flip: items written in the same second read in reverse id order",
        "self._messages.c.id.asc(),",
        "self._messages.c.id.desc(),",
    ),
    generated(
        "parity_sqlalchemy_ensure_ascii_toggled",
        "sqlalchemy-sqlite-file",
        SQLALCHEMY_MODULE,
        "SQLAlchemySession._serialize_item",
        "generated ensure_ascii toggle: stored JSON text keeps non-ASCII characters unescaped",
        "ensure_ascii=self._ensure_ascii,",
        "ensure_ascii=not self._ensure_ascii,",
        equivalent=(
            "json.loads gives back the same str for escaped and unescaped non-ASCII text, so "
            "no read can differ; only the bytes at rest change, which the parity contract "
            "(what the session returns) does not cover"
        ),
    ),
)
