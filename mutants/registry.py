"""Every hand-written mutant, by name or id, with a clear error for an unknown one."""

from __future__ import annotations

import importlib
import pkgutil

import mutants
from harness.ground.errors import UnknownNameError
from mutants.base import FORCED, HANDWRITTEN, MutantSpec

# Modules of the mutants package that hold machinery, not hand-written mutants.
MACHINERY = {"base", "registry", "generate", "operators", "hook", "pool"}


def _load_all() -> None:
    for info in sorted(pkgutil.iter_modules(mutants.__path__), key=lambda i: i.name):
        if info.name not in MACHINERY and not info.name.startswith("_"):
            importlib.import_module(f"mutants.{info.name}")


_load_all()


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
