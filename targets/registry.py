"""The table of every lane the bench knows, and lookup by name with a clear error.

``ALL_TARGETS`` are openai-agents' lanes; ``family_lanes()`` and the lookups below serve the
active family (arib.ground.family), whose ``lanes`` field names its own table.
"""

from __future__ import annotations

from arib.ground.errors import UnknownNameError
from arib.ground.family import active_family, plugin_lanes
from arib.targets.base import TargetSpec
from arib.targets.reference import REFERENCE
from arib.targets.sdk import LOCAL_TARGETS
from arib.targets.services import SERVICE_TARGETS

REAL_TARGETS: tuple[TargetSpec, ...] = (*LOCAL_TARGETS, *SERVICE_TARGETS)
ALL_TARGETS: tuple[TargetSpec, ...] = (REFERENCE, *REAL_TARGETS)


def family_lanes() -> tuple[TargetSpec, ...]:
    """Every lane of the active family, its reference first, then the lanes installed
    packages add (arib.ground.family.plugin_lanes)."""
    family = active_family()
    own = tuple(family.resolve("lanes"))
    return (*own, *plugin_lanes(family.name, frozenset(t.name for t in own)).loaded)


def real_lanes() -> tuple[TargetSpec, ...]:
    """The active family's lanes of real backends (every lane but the reference)."""
    return tuple(t for t in family_lanes() if not t.reference)


def get_target(name: str) -> TargetSpec:
    """The lane called ``name``; an unknown name raises UnknownNameError listing the known."""
    lanes = family_lanes()
    for spec in lanes:
        if spec.name == name:
            return spec
    known = ", ".join(t.name for t in lanes)
    raise UnknownNameError(
        f"unknown backend lane {name!r}: lanes are named by the adapters of family "
        f"{active_family().name!r}; use one of: {known}"
    )


def parse_lanes(text: str | None) -> tuple[TargetSpec, ...]:
    """Lanes from a comma-separated list; None or empty means every real lane."""
    if not text:
        return real_lanes()
    return tuple(get_target(part.strip()) for part in text.split(",") if part.strip())
