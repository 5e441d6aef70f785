"""The one cache key of a verdict: a check judged on a mutant on a lane.

Admission and the survey cache the same kind of fact (what a check made of a mutant on a
lane, over its reruns), so they key it with one recipe; ``kind`` and the extras keep the two
stores apart where their runs differ (the survey's engine, its lane's waits).
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
from collections.abc import Mapping
from typing import Any

from checks.base import CheckSpec
from harness.cache import cache_key, source_hash
from harness.execute import python_version, sdk_version
from harness.ground.family import active_family, get_family
from mutants.base import MutantSpec


def _modules(package: str, helpers_only: bool) -> tuple[str, ...]:
    found = pkgutil.iter_modules(importlib.import_module(package).__path__)
    return tuple(sorted(f"{package}.{info.name}" for info in found if not info.ispkg
                        and (info.name.startswith("_") or not helpers_only)))


@functools.cache
def family_sources(family: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The modules of a family whose change must not reuse cached verdicts: the helper
    modules its checks share (``checks/_*.py``), and every module of the package that holds
    its reference target (builders, row writers, the reference and its mixins: targets/)."""
    record = get_family(family)
    reference_package = record.reference.partition(":")[0].rpartition(".")[0]
    return _modules(record.checks, True), _modules(reference_package, False)


def verdict_key(kind: str, check: CheckSpec, lane: str, mutant: MutantSpec, *, reruns: int,
                seed: int, params: Mapping[str, int], limit: str, **extra: Any) -> str:
    """The key of ``check``'s verdicts on ``mutant`` on ``lane``: every source that can change
    them (the check, its helpers, how a check is run, the mutated module and every target
    module, the mutant's own source), the interpreter and SDK versions, and the run's
    reruns, seed, parameters and time-limit rule."""
    helpers, targets = family_sources(active_family().name)
    return cache_key(
        kind=kind,
        lane=lane,
        check=source_hash(check.module, "checks.base", "checks.common", "harness.execute",
                          *helpers),
        target=source_hash(mutant.module, *targets),
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
