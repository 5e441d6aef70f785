"""The one catalogue of the active family's mutants, by name or id, with a clear error for an
unknown one. A family's mutants are those that the modules of its mutants package register
(openai-agents: mutants/openai_agents/, LangGraph: mutants/langgraph/): the hand-written ones
its checks are paired with (``@handwritten``), and apart from them, in each module's
``PARITY_MUTANTS`` table, those its parity gate must fail on (``arib.mutants.parity``), which
admission and the survey never see. A user's own hand-written mutants join them from outside
the project (an ``arib.mutants`` entry point, or a file in ``$ARIB_MUTANTS``:
arib.ground.extensions) and are judged by the same rules."""

from __future__ import annotations

import functools
import importlib
import os
import pkgutil
from types import ModuleType

from arib.ground.errors import MutantDefinitionError, UnknownNameError
from arib.ground.extensions import MUTANTS_VAR, user_mutant_modules
from arib.ground.family import active_family
from arib.mutants.base import DEFINED_IN, FORCED, HANDWRITTEN, MutantSpec


@functools.cache
def _load_all(package: str) -> tuple[ModuleType, ...]:
    """Every module of a family's mutants package, imported (each registers its mutants),
    by name; its helpers (``_name``) are not."""
    pkg = importlib.import_module(package)
    return tuple(importlib.import_module(f"{package}.{info.name}")
                 for info in sorted(pkgutil.iter_modules(pkg.__path__), key=lambda i: i.name)
                 if not info.ispkg and not info.name.startswith("_"))


@functools.cache
def user_modules(family: str, paths: str) -> frozenset[str]:
    """The names of ``family``'s user mutant modules, imported once per family and
    ``$ARIB_MUTANTS`` (``paths``)."""
    return frozenset(module.__name__ for module in user_mutant_modules(family))


def _family_specs(table: dict[str, MutantSpec]) -> list[MutantSpec]:
    """The mutants of ``table`` the active family's package registers, and the user's own."""
    family = active_family()
    _load_all(family.mutants)
    users = user_modules(family.name, os.environ.get(MUTANTS_VAR, ""))
    return [m for m in table.values()
            if DEFINED_IN.get(m.id, "").rpartition(".")[0] == family.mutants
            or DEFINED_IN.get(m.id) in users]


def handwritten_mutants() -> tuple[MutantSpec, ...]:
    """Every hand-written mutant of the active family, sorted by name."""
    return tuple(sorted(_family_specs(HANDWRITTEN), key=lambda m: m.name))


def forced_broken(lane: str = "") -> MutantSpec:
    """The forced-broken mutant of the family's reference, used by the sanity gate; or, given
    another ``lane`` (a check's own reference: ``CheckSpec.reference``), the one of that lane."""
    family = active_family()
    if lane and lane != family.resolve("reference").name:
        found = [m for m in _family_specs(FORCED) if m.target == lane]
        if len(found) != 1:
            raise MutantDefinitionError(
                f"a check names reference={lane!r}, whose lane has {len(found)} forced-broken "
                f"mutants in {family.mutants!r} (one is needed); register exactly one with "
                f"@handwritten(target={lane!r}, ..., forced=True)"
            )
        return found[0]
    found = [m for m in _family_specs(FORCED) if m.name == family.forced_broken]
    if not found:
        raise MutantDefinitionError(
            f"family {family.name!r} names forced_broken={family.forced_broken!r}, but its "
            f"package {family.mutants!r} registers no forced mutant of that name; register "
            f"it with @handwritten(..., forced=True)"
        )
    return found[0]


def parity_mutants() -> tuple[MutantSpec, ...]:
    """Every parity mutant of the active family: the ``PARITY_MUTANTS`` tables of its mutants
    package's modules, in module order."""
    return tuple(mutant for module in _load_all(active_family().mutants)
                 for mutant in getattr(module, "PARITY_MUTANTS", ()))


def get_parity_mutant(name: str) -> MutantSpec:
    """A parity mutant by name or id; an unknown one raises UnknownNameError listing the known."""
    mutants = parity_mutants()
    for mutant in mutants:
        if name in (mutant.name, mutant.id):
            return mutant
    known = ", ".join(m.name for m in mutants) or "none"
    raise UnknownNameError(f"unknown parity mutant {name!r} of family "
                           f"{active_family().name!r}: use one of {known}")


def get_mutant(key: str) -> MutantSpec:
    """A hand-written mutant by name or id; unknown keys raise UnknownNameError."""
    for spec in handwritten_mutants():
        if key in (spec.name, spec.id):
            return spec
    known = ", ".join(m.name for m in handwritten_mutants())
    raise UnknownNameError(
        f"unknown mutant {key!r}: pair a check with a mutant defined in "
        f"{active_family().mutants}/ or in your own module (an arib.mutants entry point, or "
        f"--mutants PATH); known: {known}"
    )
