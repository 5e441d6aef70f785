"""Mutants the parity gate is paired with: each makes ONE backend lane diverge.

A gate that no divergence can fail measures nothing, so the gate ships with mutants and must
fail on every one that is not marked equivalent (``tests/test_parity_mutants.py``). A mutant is
installed only in the forked child of the lanes of its target, so exactly one backend diverges
while every other lane stays clean.

- hand-written mutants are overrides, our own code, patched onto the backend class;
- generated-style mutants are one textual edit of the installed module's source, served by the
  mutated-source import hook ``mutants.hook.serve_mutated_module`` (or, where that is absent,
  the minimal private ``harness.parity.mutsource.serve_source``); site-packages is never
  written.

An *equivalent* mutant changes the storage but not what any read returns; the gate cannot and
must not fail on it. It is kept with its reason so that the blind spot is written down.
"""

from __future__ import annotations

import difflib
import importlib
import inspect
import textwrap
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from harness.errors import UnknownNameError
from harness.model import MutantKind
from mutants.base import mutant_id
from targets.sdk import (
    ADVANCED_SQLITE_MODULE,
    ASYNC_SQLITE_MODULE,
    SQLALCHEMY_MODULE,
    SQLITE_MODULE,
)


@dataclass(frozen=True)
class ParityMutant:
    """One mutant of one backend lane, and whether the gate must fail on it."""

    name: str
    kind: MutantKind
    target: str
    module: str
    qualname: str
    description: str
    original: str
    replacement: str
    install: Callable[[], None]
    equivalent: str | None = None

    @property
    def id(self) -> str:
        operator = "textual-edit" if self.kind is MutantKind.GENERATED else "handwritten"
        return mutant_id(self.module, self.qualname, operator, self.original, self.replacement)

    @property
    def must_kill(self) -> bool:
        return self.equivalent is None

    def diff(self) -> str:
        """The change, readable: a unified diff, or the override's code."""
        if self.kind is MutantKind.HANDWRITTEN:
            return f"# hand-written override of {self.module}.{self.qualname}\n{self.replacement}"
        return "".join(
            difflib.unified_diff(
                [self.original + "\n"],
                [self.replacement + "\n"],
                fromfile=f"a/{self.module} ({self.qualname})",
                tofile=f"b/{self.module} ({self.qualname})",
            )
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "kind": self.kind.value,
            "target": self.target,
            "module": self.module,
            "qualname": self.qualname,
            "description": self.description,
            "equivalent": self.equivalent,
            "diff": self.diff(),
        }


def _cls(module: str, name: str) -> Any:
    return getattr(importlib.import_module(module), name)


# --- hand-written overrides ------------------------------------------------------------------


def _sqlite_reversed_reads() -> None:
    cls = _cls(SQLITE_MODULE, "SQLiteSession")
    original = cls.get_items

    async def get_items(self: Any, limit: int | None = None) -> list[Any]:
        return list(reversed(await original(self, limit)))

    cls.get_items = get_items


OUTPUT = "function_call_output"


def _async_sqlite_drops_tool_outputs() -> None:
    cls = _cls(ASYNC_SQLITE_MODULE, "AsyncSQLiteSession")
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
    cls = _cls(ADVANCED_SQLITE_MODULE, "AdvancedSQLiteSession")
    original = cls.add_items

    async def add_items(self: Any, items: list[Any]) -> None:
        await original(self, [_nfc(i) for i in items])

    cls.add_items = add_items


def _handwritten(
    name: str, target: str, module: str, qualname: str, description: str, fn: Callable[[], None]
) -> ParityMutant:
    source = textwrap.dedent(inspect.getsource(fn))
    return ParityMutant(
        name=name,
        kind=MutantKind.HANDWRITTEN,
        target=target,
        module=module,
        qualname=qualname,
        description=description,
        original=qualname,
        replacement=source,
        install=fn,
    )


# --- generated-style source edits ------------------------------------------------------------


def _generated(
    name: str,
    target: str,
    module: str,
    qualname: str,
    description: str,
    original: str,
    replacement: str,
    equivalent: str | None = None,
) -> ParityMutant:
    def install() -> None:
        from harness.parity.mutsource import installed_source, mutate_source

        source, origin = installed_source(module)
        mutated = mutate_source(source, original, replacement, where=origin)
        serve: Callable[[str, str], object]
        try:
            from mutants.hook import serve_mutated_module as serve
        except ImportError:  # the shared hook is absent: the private minimal one serves it
            from harness.parity.mutsource import serve_source as serve
        serve(module, mutated)

    return ParityMutant(
        name=name,
        kind=MutantKind.GENERATED,
        target=target,
        module=module,
        qualname=qualname,
        description=description,
        original=original,
        replacement=replacement,
        install=install,
        equivalent=equivalent,
    )


PARITY_MUTANTS: tuple[ParityMutant, ...] = (
    _handwritten(
        "parity_sqlite_reversed_reads",
        "sqlite-file",
        SQLITE_MODULE,
        "SQLiteSession.get_items",
        "reversed ordering: get_items returns the history newest first",
        _sqlite_reversed_reads,
    ),
    _handwritten(
        "parity_async_sqlite_drops_tool_outputs",
        "async-sqlite-file",
        ASYNC_SQLITE_MODULE,
        "AsyncSQLiteSession.add_items",
        "dropped item: every function_call_output is silently not stored",
        _async_sqlite_drops_tool_outputs,
    ),
    _handwritten(
        "parity_advanced_nfc_serialization",
        "advanced-sqlite-file",
        ADVANCED_SQLITE_MODULE,
        "AdvancedSQLiteSession.add_items",
        "changed serialization: strings are stored Unicode-NFC-normalized (e + U+0301 -> é)",
        _advanced_nfc_serialization,
    ),
    _generated(
        "parity_sqlite_order_desc",
        "sqlite-file",
        SQLITE_MODULE,
        "SQLiteSession.get_items",
        "generated ORDER BY flip: an unlimited get_items reads newest first",
        "ORDER BY id ASC",
        "ORDER BY id DESC",
    ),
    _generated(
        "parity_sqlalchemy_id_desc",
        "sqlalchemy-sqlite-file",
        SQLALCHEMY_MODULE,
        "SQLAlchemySession.get_items",
        "generated tie-break flip: items written in the same second read in reverse id order",
        "self._messages.c.id.asc(),",
        "self._messages.c.id.desc(),",
    ),
    _generated(
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


def parity_mutants() -> tuple[ParityMutant, ...]:
    return PARITY_MUTANTS


def get_parity_mutant(name: str) -> ParityMutant:
    """A parity mutant by name or id; an unknown one raises UnknownNameError listing the known."""
    for mutant in PARITY_MUTANTS:
        if name in (mutant.name, mutant.id):
            return mutant
    known = ", ".join(m.name for m in PARITY_MUTANTS)
    raise UnknownNameError(f"unknown parity mutant {name!r}: use one of {known}")
