"""Which class a user's lane is mutated in: the class its factory returns, found before forking.

A built-in lane names its backend class (``TargetSpec.backend`` in ``TargetSpec.module``). A
user's lane (an ``arib.api`` ``@lane`` factory, from an entry point or a reference) names its
factory there instead, unless it names its store class (``@lane(store=...)``, or the factory's
return annotation: ``arib.api.lane``), and the survey must mutate the store, not the factory.
The class is then the type of the object one build returns (built once in a forked child,
on a temporary root). It must be defined at the top level of
a Python source module, or the lane gets one error line naming it, the rule and the fix.

A lane may name more code to mutate (``TargetSpec.mutated_also``: ``@lane(mutate=...)``): each
class found there is surveyed as a lane of its own, ``<lane>[<Class>]``, built by the same
factory (``store_lanes``), so that its scores and survivors are read apart from the store's.
"""

from __future__ import annotations

import ast
import asyncio
import dataclasses
import functools
import importlib
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from arib.ground.child import ChildStatus, run_jobs
from arib.ground.errors import MutantDefinitionError
from arib.ground.sources import installed_source
from arib.mutants.hook import watch
from arib.targets.base import BuildContext, TargetSpec

RULE = ("the rule: the survey mutates the class a lane's factory returns, and that class must "
        "be defined at the top level of a Python source module")
PROBE_TIMEOUT_S = 30.0


class UserLaneError(MutantDefinitionError):
    """A user's lane whose store class cannot be found or mutated (one line: lane, rule, fix)."""


def _named(module: str, qualname: str) -> Any:
    """The object ``qualname`` names in ``module``, or None."""
    try:
        found: Any = importlib.import_module(module)
    except Exception:  # noqa: BLE001 - a module that cannot be imported names nothing
        return None
    for part in qualname.split("."):
        found = getattr(found, part, None)
        if found is None:
            return None
    return found


def _built_class(lane: TargetSpec, services: Mapping[str, str], tmpdir: str | None
                 ) -> tuple[str, str]:
    """In a child: build the lane once on a temporary root; its session's class."""

    async def build() -> tuple[str, str]:
        with tempfile.TemporaryDirectory(dir=tmpdir) as root:
            handle = await lane.build(BuildContext(Path(root), "arib-store-probe",
                                                   dict(services)))
            try:
                made = type(handle.session)
                return made.__module__, made.__qualname__
            finally:
                await handle.dispose()

    return asyncio.run(build())


def _probe(lane: TargetSpec, services: Mapping[str, str], tmpdir: str | None
           ) -> tuple[str, str]:
    (outcome,) = run_jobs([functools.partial(_built_class, lane, services, tmpdir)],
                          workers=1, timeout_s=PROBE_TIMEOUT_S)
    if outcome.status is not ChildStatus.OK:
        last = ([line for line in outcome.detail.splitlines() if line.strip()] or ["?"])[-1]
        raise UserLaneError(
            f"lane {lane.name!r}: its factory {lane.module}.{lane.backend} could not build a "
            f"store to find its class ({outcome.status.value}: {last.strip()[:200]}); {RULE}; "
            f"fix the factory, or name the class with @lane(store=...)")
    module, qualname = outcome.value
    return str(module), str(qualname)


def check_mutable(lane: str, module: str, qualname: str) -> None:
    """Raise UserLaneError unless class ``qualname`` is at the top level of source ``module``."""
    where = f"lane {lane!r}: its store class {module}.{qualname}"
    if "." in qualname:
        inside = "a function" if "<locals>" in qualname else "another class"
        raise UserLaneError(f"{where} is defined inside {inside}; {RULE}; fix: move the class "
                            f"to the top level of a module")
    try:
        path, source = installed_source(module)
    except Exception as exc:  # noqa: BLE001 - not a source file: a C extension, a built-in
        raise UserLaneError(f"{where} is not in a Python source file (a C extension or a "
                            f"built-in module cannot be mutated: {exc}); {RULE}; fix: survey a "
                            f"store written in Python") from exc
    try:
        tree = ast.parse(source, path)
    except SyntaxError as exc:
        raise UserLaneError(f"{where}: {path} does not parse ({exc}); {RULE}") from exc
    if not any(isinstance(node, ast.ClassDef) and node.name == qualname for node in tree.body):
        raise UserLaneError(f"{where} is not defined by a class statement at the top level "
                            f"of {path} (bound there from elsewhere, or from a C extension); "
                            f"{RULE}; fix: name the module that defines it with "
                            f"@lane(store=...)")


def _top_level_classes(lane: str, module: str) -> tuple[str, ...]:
    """The classes defined by a class statement at the top level of source ``module``."""
    try:
        path, source = installed_source(module)
        tree = ast.parse(source, path)
    except Exception as exc:  # noqa: BLE001 - not found, not source, or not Python
        raise UserLaneError(f"lane {lane!r}: module {module!r} it names to mutate cannot be "
                            f"read as Python source ({type(exc).__name__}: {exc}); {RULE}; "
                            f"fix: name an importable module written in Python") from exc
    found = tuple(node.name for node in tree.body if isinstance(node, ast.ClassDef))
    if not found:
        raise UserLaneError(f"lane {lane!r}: module {module!r} it names to mutate defines no "
                            f"class at its top level; {RULE}; fix: name a module whose "
                            f"classes the store uses, or 'module:Class'")
    return found


def store_lanes(lane: TargetSpec, services: Mapping[str, str] | None = None,
                tmpdir: str | None = None) -> tuple[TargetSpec, ...]:
    """``store_lane(lane)``, then one lane per class ``lane.mutated_also`` names, each
    ``<lane>[<Class>]`` with the same builder; UserLaneError, one line, for the first class
    that cannot be found or mutated."""
    first = store_lane(lane, services, tmpdir)
    out = [dataclasses.replace(first, mutated_also=())]
    seen = {(first.module, first.backend)}
    for ref in lane.mutated_also:
        module, _, qualname = ref.partition(":")
        for name in (qualname,) if qualname else _top_level_classes(lane.name, module):
            check_mutable(lane.name, module, name)
            if (module, name) in seen:
                continue
            seen.add((module, name))
            # the modules holding the store class and the factory see the mutant's objects
            watch(first.module)
            if lane.module:
                watch(lane.module)
            out.append(dataclasses.replace(first, name=f"{lane.name}[{name}]", module=module,
                                           backend=name, mutated_also=(), fixed_guards=()))
    return tuple(out)


def store_lane(lane: TargetSpec, services: Mapping[str, str] | None = None,
               tmpdir: str | None = None) -> TargetSpec:
    """``lane`` with ``module`` and ``backend`` naming the class the survey mutates: ``lane``
    itself when it names a class; else the class its factory returns (see the module
    docstring). UserLaneError, one line, when that class cannot be found or mutated."""
    named = _named(lane.module, lane.backend)
    if isinstance(named, type):
        check_mutable(lane.name, lane.module, lane.backend)
        return lane
    module, qualname = _probe(lane, services or {}, tmpdir)
    check_mutable(lane.name, module, qualname)
    if lane.module and lane.module != module:
        watch(lane.module)  # the factory's module holds the class: rebind it to the mutant's
    return dataclasses.replace(lane, module=module, backend=qualname)

