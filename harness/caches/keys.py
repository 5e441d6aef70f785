"""The one cache key of a verdict: a check judged on a mutant on a lane.

Admission and the survey cache the same kind of fact (what a check made of a mutant on a
lane, over its reruns), so they key it with one recipe; ``kind`` and the extras keep the two
stores apart where their runs differ (the survey's engine, its lane's waits). The survey knows
what each check executed on each lane (its clean runs' coverage), so its keys name the
installed code by what ran and are reused across SDK versions; admission's are bound to the
SDK's version.
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
from collections.abc import Mapping
from typing import Any

from arib.caches.inputs import changed_function_hash, function_source_hash
from arib.caches.verdicts import cache_key, source_hash
from arib.checks.base import CheckSpec
from arib.execute import python_version, sdk_version
from arib.ground.family import active_family, get_family
from arib.ground.sources import module_source
from arib.mutants.base import MutantSpec
from arib.targets.base import TargetSpec


def _modules(package: str, helpers_only: bool) -> tuple[str, ...]:
    found = pkgutil.iter_modules(importlib.import_module(package).__path__)
    return tuple(sorted(f"{package}.{info.name}" for info in found if not info.ispkg
                        and (info.name.startswith("_") or not helpers_only)))


@functools.cache
def family_sources(family: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The modules of a family whose change must not reuse cached verdicts: the helper
    modules its checks share (``checks/_*.py``, the family's and every family's), and every
    module of the package that holds its reference target (builders, row writers, the
    reference and its mixins) and of the lanes' shared ground (``targets/*.py``)."""
    record = get_family(family)
    reference_package = record.reference.partition(":")[0].rpartition(".")[0]
    shared_checks, shared_targets = _modules("arib.checks", True), _modules("arib.targets", False)
    helpers = tuple(sorted({*shared_checks, *_modules(record.checks, True)}))
    targets = tuple(sorted({*shared_targets, *_modules(reference_package, False)}))
    return helpers, targets


def mutant_source(mutant: MutantSpec) -> dict[str, str | None]:
    """What a mutant changes, by source: a generated one's mutated function before and after
    (the whole module's source when its function cannot be found), a hand-written one's
    override. Unchanged code elsewhere in the module is named by what the check executes."""
    if mutant.source is None:
        return {"override": mutant.replacement}
    return dict(_function_change(mutant.module, mutant.qualname, mutant.source))


@functools.lru_cache(maxsize=1024)
def _function_change(module: str, qualname: str, source: str) -> tuple[tuple[str, str], ...]:
    """``mutant_source`` of a generated mutant, parsed once per mutant and process (a survey
    keys each mutant once per check, and parsing a module takes tens of milliseconds)."""
    before = _key_source(module)
    was = function_source_hash(before, qualname) if before is not None else None
    now = changed_function_hash(before, source, qualname) if before is not None else None
    if was is None or now is None:
        return (("module_before", source_hash(module)), ("module_after", source))
    return (("function_before", was), ("function_after", now))


@functools.cache
def _key_source(module: str) -> str | None:
    """What a key reads of the installed ``module``: its source, read once per process
    without importing it (``arib.ground.sources.module_source``), or None when unreadable."""
    try:
        return module_source(module)
    except (OSError, SyntaxError, UnicodeDecodeError):
        return None


def check_source(check: CheckSpec) -> str:
    """The hash of what a check's verdicts are computed by: its module, the checks' base and
    common code, the runner and the family's shared check helpers."""
    helpers, _ = family_sources(active_family().name)
    return source_hash(check.module, "arib.checks.base", "arib.checks.common", "arib.execute",
                       *helpers)


def clean_key(check: CheckSpec, lane: TargetSpec, *, module_digest: str, reruns: int,
              seed: int, params: Mapping[str, int], limit: str, **extra: Any) -> str:
    """The key of ``check``'s clean reruns on ``lane`` (``arib.caches.clean``): the check's
    source, the lane's configuration, the source of the lane's module (``module_digest``: the
    recorded lines are its line numbers), the reruns, seed, parameters and time-limit rule,
    and the source of the recorder and of the rule that names inputs.
    The rest of the installed code is not in the key: the entry names what the runs executed,
    and a lookup compares it with this installation."""
    _, targets = family_sources(active_family().name)
    return cache_key(kind="clean", lane=lane.name, check=check_source(check),
                     python=python_version(), reruns=reruns, seed=seed, params=dict(params),
                     limit=limit, target=source_hash(*targets), lane_config=lane.to_json(),
                     module=module_digest, **extra,
                     # what records the lines and names the inputs the entry keeps
                     recorder=source_hash("arib.survey.coverage", "arib.caches.inputs"))


def verdict_key(kind: str, check: CheckSpec, lane: str, mutant: MutantSpec, *, reruns: int,
                seed: int, params: Mapping[str, int], limit: str,
                executed: Mapping[str, Any] | None = None,
                lane_spec: TargetSpec | None = None, **extra: Any) -> str:
    """The key of ``check``'s verdicts on ``mutant`` on ``lane``: every source that can change
    them and the run's reruns, seed, parameters and time-limit rule.

    With ``executed`` (``arib.caches.inputs.named_inputs`` of what the check's clean runs
    executed) and ``lane_spec``, the installed code is named by what ran: the SDK's executed
    functions by source, the other distributions by version, the mutant by its function, the
    lane by its configuration. Such a key is the same on every SDK version where all of that
    is the same. Without them, the key is bound to the SDK's version and the whole mutated
    module (what cannot be named is never reused across versions).
    """
    _, targets = family_sources(active_family().name)
    common = dict(kind=kind, lane=lane, check=check_source(check), mutant=mutant.id,
                  python=python_version(), reruns=reruns, seed=seed, params=dict(params),
                  limit=limit, **extra)
    if executed is not None and lane_spec is not None:
        return cache_key(**common, target=source_hash(*targets), lane_config=lane_spec.to_json(),
                         mutated=mutant_source(mutant), executed=dict(executed))
    return cache_key(
        **common,
        target=source_hash(mutant.module, *targets),
        mutant_source=mutant.replacement if mutant.source is None else mutant.source,
        sdk=sdk_version(),
    )


def gate_key(check: CheckSpec, reference: TargetSpec, forced: MutantSpec, *, reruns: int,
             seed: int, params: Mapping[str, int], limit: str, runner: str) -> str:
    """The key of ``check``'s two sanity gates (``arib.caches.gates``): a verdict key of the
    forced-broken mutant on the gates' ``reference`` lane (the check's sources and helpers,
    ``arib.execute``, the reference package and every module of ``targets/``, the forced
    mutant's module and own source, the Python and SDK versions, reruns, seed, parameters and
    time-limit rule), and besides: the reference lane's module and configuration, the check's
    description (its timeout sets the gates' limit) and ``runner``, the source of what runs
    the gates (``arib.admission``)."""
    return verdict_key("gate", check, reference.name, forced, reruns=reruns, seed=seed,
                       params=params, limit=limit, spec=check.to_json(),
                       reference=source_hash(reference.module),
                       lane_config=reference.to_json(), runner=source_hash(runner))


def base_key(check: CheckSpec, lane: TargetSpec, *, reruns: int, seed: int,
             params: Mapping[str, int], limit: str, runner: str) -> str:
    """The key of ``check``'s clean base on ``lane`` kept as not judgeable
    (``arib.caches.bases``): the check's sources, helpers and description, the lane's module
    and configuration, the family's targets, the Python and SDK versions, the reruns, seed,
    parameters and time-limit rule, and ``runner``, the source of what runs the bases."""
    _, targets = family_sources(active_family().name)
    return cache_key(kind="base", lane=lane.name, check=check_source(check),
                     spec=check.to_json(), python=python_version(), sdk=sdk_version(),
                     reruns=reruns, seed=seed, params=dict(params), limit=limit,
                     target=source_hash(lane.module, *targets), lane_config=lane.to_json(),
                     runner=source_hash(runner))
