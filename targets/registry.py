"""The table of every lane the bench knows, and lookup by name with a clear error.

``family_lanes()`` and the lookups below serve the active family (arib.ground.family), whose
``lanes`` field names its own table (openai-agents: arib.targets.openai_agents.lanes).
"""

from __future__ import annotations

import importlib
from dataclasses import replace
from typing import Any

from arib.ground.errors import UnknownNameError
from arib.ground.family import active_family, plugin_lanes
from arib.targets.base import TargetSpec


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
    """The lane called ``name`` (or a ``module:attribute`` reference, ``lane_reference``); an
    unknown name raises UnknownNameError listing the known."""
    if ":" in name:
        return lane_reference(name)
    lanes = family_lanes()
    for spec in lanes:
        if spec.name == name:
            return spec
    known = ", ".join(t.name for t in lanes)
    raise UnknownNameError(
        f"unknown backend lane {name!r}: lanes are named by the adapters of family "
        f"{active_family().name!r}; use one of: {known}"
    )


def lane_reference(ref: str) -> TargetSpec:
    """The lane a ``module:attribute`` reference names: an ``arib.api`` lane (``@lane``), a
    TargetSpec, or a store class the family makes a lane of (its ``user_lane``: openai-agents'
    takes a class built as ``Class(root, session_id)``), imported now (a user's lane named
    without installing an entry point)."""
    module, _, attr = ref.partition(":")
    try:
        value: Any = importlib.import_module(module)
        for part in attr.split("."):
            value = getattr(value, part)
    except (ImportError, AttributeError, ValueError) as exc:
        raise UnknownNameError(
            f"lane reference {ref!r} cannot be imported ({type(exc).__name__}: {exc}); the "
            f"rule: 'module:attribute' names an importable @lane factory or TargetSpec; fix "
            f"the reference, or put its folder on PYTHONPATH") from exc
    if isinstance(value, type) and not callable(getattr(value, "spec", None)):
        family = active_family()
        if not family.user_lane:
            raise UnknownNameError(
                f"lane reference {ref!r} names class {value.__qualname__}; the rule: family "
                f"{family.name!r} makes no lane from a class; fix: name a TargetSpec")
        value = family.resolve("user_lane")(value)  # UsageError naming a class that is not
    spec = value.spec() if callable(getattr(value, "spec", None)) else value
    if not isinstance(spec, TargetSpec):
        raise UnknownNameError(
            f"lane reference {ref!r} names {value!r}, which is not a lane; the rule: "
            f"'module:attribute' names an arib.api @lane factory or a TargetSpec; fix: "
            f"decorate the factory with @arib.api.lane")
    return replace(spec, named_by=ref)


def parse_lanes(text: str | None) -> tuple[TargetSpec, ...]:
    """Lanes from a comma-separated list of names and ``module:attribute`` references (see
    ``lane_reference``); None or empty means every real lane."""
    if not text:
        return real_lanes()
    return tuple(get_target(part.strip()) for part in text.split(",") if part.strip())
