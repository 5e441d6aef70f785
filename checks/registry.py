"""Discovers check modules in checks/ and validates each definition."""

from __future__ import annotations

import importlib
import pkgutil
import re
from types import ModuleType

from checks.base import CheckSpec
from harness.ground.errors import CheckDefinitionError, UnknownNameError
from harness.ground.family import active_family
from harness.ground.schedule import ScheduleError

INFRASTRUCTURE = {"base", "common", "registry"}
ID_RULE = re.compile(r"^ARIB-[A-Z]+-\d{3}$")


def validate_module(module: ModuleType) -> CheckSpec:
    """The CHECK of a module, or CheckDefinitionError naming what is wrong and the fix."""
    spec = getattr(module, "CHECK", None)
    name = module.__name__
    if not isinstance(spec, CheckSpec):
        raise CheckDefinitionError(
            f"check module {name!r} defines no CHECK = CheckSpec(...); every module in "
            f"checks/ must define one (see checks/conc_001.py)"
        )
    if not spec.id or not ID_RULE.match(spec.id):
        raise CheckDefinitionError(
            f"check module {name!r} has id {spec.id!r}: an id looks like ARIB-AREA-001"
        )
    if not spec.mutants:
        raise CheckDefinitionError(
            f"check {spec.id!r} in {name!r} is paired with no hand-written mutant: a check "
            f"that no mutant breaks measures nothing; add mutants=(...) naming mutants/ entries"
        )
    if not spec.params or "trials" not in {p.name for p in spec.params}:
        raise CheckDefinitionError(
            f"check {spec.id!r} in {name!r} has no 'trials' parameter; add Param('trials', ...)"
        )
    if spec.concurrent:
        try:
            spec.schedule.validate(f"check {spec.id!r} in {name!r}")
        except ScheduleError as exc:
            raise CheckDefinitionError(f"{exc}; fix its schedule=SchedulePlan(...)") from None
    object.__setattr__(spec, "module", name)
    return spec


def _import_check(name: str) -> ModuleType:
    """Import a check module; any failure (a syntax error, a missing name) is a
    CheckDefinitionError naming the module and the cause, never a raw traceback."""
    try:
        return importlib.import_module(name)
    except Exception as exc:
        raise CheckDefinitionError(
            f"check module {name!r} cannot be imported: {type(exc).__name__}: {exc}; "
            f"fix it (`python -c 'import {name}'` shows the traceback) or move it out of "
            f"{name.rpartition('.')[0]}/"
        ) from None


def load_checks(package: str | None = None) -> tuple[CheckSpec, ...]:
    """Every check in ``package`` (default: the active family's checks), sorted by id; two
    checks with one id is an error."""
    package = package or active_family().checks
    pkg = importlib.import_module(package)
    found: dict[str, CheckSpec] = {}
    for info in sorted(pkgutil.iter_modules(pkg.__path__), key=lambda i: i.name):
        # a subpackage is another family's (checks/langgraph/), never a check module
        if info.ispkg or info.name in INFRASTRUCTURE or info.name.startswith("_"):
            continue
        spec = validate_module(_import_check(f"{package}.{info.name}"))
        if spec.id in found:
            raise CheckDefinitionError(
                f"two checks have id {spec.id!r}: {found[spec.id].module!r} and "
                f"{spec.module!r}; give one of them a new id"
            )
        found[spec.id] = spec
    return tuple(found[k] for k in sorted(found))


def get_check(check_id: str, checks: tuple[CheckSpec, ...] | None = None) -> CheckSpec:
    """The check with ``check_id``; an unknown id raises UnknownNameError listing the known."""
    pool = checks if checks is not None else load_checks()
    for spec in pool:
        if spec.id == check_id:
            return spec
    raise UnknownNameError(
        f"unknown check id {check_id!r}: use one of {', '.join(c.id for c in pool)}"
    )
