"""Every hand-written mutant, by name or id, with a clear error for an unknown one."""

from __future__ import annotations

from harness.errors import UnknownNameError
from mutants import async_sqlite, reference, sqlalchemy, sqlite  # noqa: F401 - registers
from mutants.base import FORCED, HANDWRITTEN, MutantSpec


def handwritten_mutants() -> tuple[MutantSpec, ...]:
    """Every registered hand-written mutant, sorted by name."""
    return tuple(sorted(HANDWRITTEN.values(), key=lambda m: m.name))


def forced_broken() -> MutantSpec:
    """The forced-broken mutant of the reference backend used by the sanity gate."""
    (spec,) = FORCED.values()
    return spec


def get_mutant(key: str) -> MutantSpec:
    """A hand-written mutant by name or id; unknown keys raise UnknownNameError."""
    for spec in HANDWRITTEN.values():
        if key in (spec.name, spec.id):
            return spec
    known = ", ".join(m.name for m in handwritten_mutants())
    raise UnknownNameError(
        f"unknown mutant {key!r}: pair a check with a mutant defined in mutants/; known: {known}"
    )
