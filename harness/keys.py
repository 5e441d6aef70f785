"""The one cache key of a verdict: a check judged on a mutant on a lane.

Admission and the survey cache the same kind of fact (what a check made of a mutant on a
lane, over its reruns), so they key it with one recipe; ``kind`` and the extras keep the two
stores apart where their runs differ (the survey's engine, its lane's waits).
"""

from __future__ import annotations

import pkgutil
from collections.abc import Mapping
from typing import Any

import checks as checks_package
import targets as targets_package
from checks.base import CheckSpec
from harness.cache import cache_key, source_hash
from harness.execute import python_version, sdk_version
from mutants.base import MutantSpec

# Helper modules checks share (checks/_*.py): a change to one must not reuse cached verdicts.
CHECK_HELPERS = tuple(sorted(
    f"checks.{info.name}" for info in pkgutil.iter_modules(checks_package.__path__)
    if info.name.startswith("_")))

# Every module of the targets package (builders, row writers, the reference and its mixins):
# a change to any of them must not reuse cached verdicts either.
TARGET_MODULES = tuple(sorted(
    f"targets.{info.name}" for info in pkgutil.iter_modules(targets_package.__path__)))


def verdict_key(kind: str, check: CheckSpec, lane: str, mutant: MutantSpec, *, reruns: int,
                seed: int, params: Mapping[str, int], limit: str, **extra: Any) -> str:
    """The key of ``check``'s verdicts on ``mutant`` on ``lane``: every source that can change
    them (the check, its helpers, how a check is run, the mutated module and every target
    module, the mutant's own source), the interpreter and SDK versions, and the run's
    reruns, seed, parameters and time-limit rule."""
    return cache_key(
        kind=kind,
        lane=lane,
        check=source_hash(check.module, "checks.base", "checks.common", "harness.execute",
                          *CHECK_HELPERS),
        target=source_hash(mutant.module, *TARGET_MODULES),
        mutant=mutant.id,
        mutant_source=mutant.replacement if mutant.source is None else mutant.source,
        python=python_version(),
        sdk=sdk_version(),
        reruns=reruns,
        seed=seed,
        params=dict(params),
        limit=limit,
        **extra,
    )
