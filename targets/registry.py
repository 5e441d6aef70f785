"""The table of every lane the bench knows, and lookup by name with a clear error."""

from __future__ import annotations

from harness.ground.errors import UnknownNameError
from targets.base import TargetSpec
from targets.reference import REFERENCE
from targets.sdk import LOCAL_TARGETS
from targets.services import SERVICE_TARGETS

REAL_TARGETS: tuple[TargetSpec, ...] = (*LOCAL_TARGETS, *SERVICE_TARGETS)
ALL_TARGETS: tuple[TargetSpec, ...] = (REFERENCE, *REAL_TARGETS)


def get_target(name: str) -> TargetSpec:
    """The lane called ``name``; an unknown name raises UnknownNameError listing the known."""
    for spec in ALL_TARGETS:
        if spec.name == name:
            return spec
    known = ", ".join(t.name for t in ALL_TARGETS)
    raise UnknownNameError(
        f"unknown backend lane {name!r}: lanes are named by the adapters in targets/; "
        f"use one of: {known}"
    )


def parse_lanes(text: str | None) -> tuple[TargetSpec, ...]:
    """Lanes from a comma-separated list; None or empty means every real lane."""
    if not text:
        return REAL_TARGETS
    return tuple(get_target(part.strip()) for part in text.split(",") if part.strip())
