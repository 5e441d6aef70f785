"""What mutant generation produced, and the selection of generated mutants by a Selector.

Kept apart from ``arib.mutants.generate`` (which imports libcst, a third of a second): a run whose
generated mutants all come from the generation cache (arib.caches.generation) reads and
selects them without importing libcst.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import Any

from arib.ground.errors import MutantDefinitionError
from arib.ground.selector import Selector
from arib.mutants.base import MutantSpec


@dataclass(frozen=True)
class GenerationReport:
    """What generation produced for one target: mutants, drops and sites per operator."""

    target: str
    module: str
    mutants: tuple[MutantSpec, ...]
    dropped_noncompiling: int
    dropped_details: tuple[str, ...]
    sites_by_operator: dict[str, int] = field(hash=False)

    def zero_site_operators(self) -> tuple[str, ...]:
        """Operators that found no site in this module."""
        return tuple(name for name, n in self.sites_by_operator.items() if n == 0)

    def mutants_by_operator(self) -> dict[str, int]:
        """How many compiling mutants each operator produced."""
        counts = Counter(mt.operator for mt in self.mutants)
        return {name: counts.get(name, 0) for name in self.sites_by_operator}

    def to_json(self) -> dict[str, Any]:
        """The JSON form of this report, each mutant with its original and replacement."""
        return {
            "target": self.target,
            "module": self.module,
            "sites_by_operator": dict(self.sites_by_operator),
            "mutants_by_operator": self.mutants_by_operator(),
            "dropped_noncompiling": self.dropped_noncompiling,
            "dropped_details": list(self.dropped_details),
            "mutants": [
                {**mt.to_json(), "original": mt.original, "replacement": mt.replacement}
                for mt in self.mutants
            ],
        }


def select(mutants: Iterable[MutantSpec], selector: Selector) -> tuple[MutantSpec, ...]:
    """The mutants a selector names (fnmatch globs); an empty match is a definition error."""
    pool = tuple(mutants)
    chosen = tuple(
        mt for mt in pool
        if fnmatchcase(mt.target, selector.target)
        and fnmatchcase(mt.qualname, selector.qualname)
        and fnmatchcase(mt.operator, selector.operator)
    )
    if chosen:
        return chosen
    same_target = [mt for mt in pool if fnmatchcase(mt.target, selector.target)]
    if same_target:
        ops = ", ".join(sorted({mt.operator for mt in same_target}))
        hint = (f"{len(same_target)} generated mutants of {selector.target!r} exist, with "
                f"operators {ops}")
    else:
        targets = ", ".join(sorted({mt.target for mt in pool})) or "none"
        hint = f"no generated mutant has target {selector.target!r} (targets: {targets})"
    raise MutantDefinitionError(
        f"selector Selector(target={selector.target!r}, qualname={selector.qualname!r}, "
        f"operator={selector.operator!r}) matches no generated mutant: {hint}; fix the "
        f"selector's globs"
    )
