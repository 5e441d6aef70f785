"""Imports, in the parent and once, what the runs it is about to fork import.

A run loads only the checks it runs and what they import: the check modules import no backend
at module level, and nothing imports a lane's backend (the SDK, its drivers) until a run that
needs it is about to be forked. The parent then imports it once, so that every child forked
after that starts warm; a child that imported the SDK itself would pay for it again in every
run (about a second and a half for openai-agents).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterable

from arib.checks.base import CheckSpec
from arib.targets.base import TargetSpec

_FAILED: set[str] = set()  # could not be imported in this process: the child says why


def modules_for(check: CheckSpec | None, lane: TargetSpec) -> tuple[str, ...]:
    """What a run of ``check`` on ``lane`` imports beyond the check's own module: the check's
    ``preload``, the lane's backend module and the lane's ``preload``."""
    return (*(check.preload if check is not None else ()), lane.module, *lane.preload)


def warm_modules(names: Iterable[str]) -> None:
    """Import each module not tried yet in this process. One that cannot be imported is left
    to the child, whose run reports it (a missing driver is the lane's finding, not the
    parent's crash)."""
    for name in names:
        if name in sys.modules or name in _FAILED:
            continue
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - the child's own import reports it
            _FAILED.add(name)


def warm(check: CheckSpec | None, lane: TargetSpec) -> None:
    """Import what a run of ``check`` (None: any check) on ``lane`` needs, once."""
    warm_modules(modules_for(check, lane))


def warm_all(pairs: Iterable[tuple[CheckSpec | None, TargetSpec]]) -> None:
    """``warm`` for every (check, lane) pair."""
    for check, lane in pairs:
        warm(check, lane)
