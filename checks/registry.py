"""Discovers check modules in checks/ and validates each definition.

A run imports only the checks it runs. The registry's index is the check modules' file names:
every check module is named by its id (ARIB-CLEAR-001 is ``clear_001.py`` in its family's
checks package), so ``check_index`` lists every id and ``get_check`` finds and imports the one
module of an id without opening or importing any other check module. ``load_checks`` imports
them all (``list``, ``docs``, ``admit --all``, the survey) and refuses a module that is not
named by the id its CHECK has, so that the index and the imported checks always agree. Check
modules import no backend distribution at module level (the SDK, drivers, libcst): what a
trial needs it imports itself, and ``CheckSpec.preload`` names what the parent imports once
before forking the check's runs (tests/test_registry.py holds these rules).
A user's own check package joins the active family's through an ``arib.checks`` entry point
named by the family (arib.ground.extensions): its checks are found and judged by the same rules.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
from types import ModuleType

from arib.checks.base import CheckSpec, ParityFault
from arib.ground.errors import CheckDefinitionError, UnknownNameError
from arib.ground.extensions import CHECKS_GROUP, extension_packages
from arib.ground.family import active_family
from arib.ground.schedule import ScheduleError

ID_RULE = re.compile(r"^ARIB-[A-Z]+-\d{3}$")
# The file name of a check module: its id without ``ARIB-``, lower case, ``-`` as ``_``.
_FILE_RULE = re.compile(r"^[a-z]+_\d{3}$")


def file_stem(check_id: str) -> str:
    """The file name (without ``.py``) of the module of ``check_id``: ARIB-CLEAR-001 ->
    ``clear_001``."""
    return check_id.removeprefix("ARIB-").lower().replace("-", "_")


def _id_of_stem(stem: str) -> str | None:
    """The check id a module's file name stands for (``clear_001`` -> ARIB-CLEAR-001), or
    None when the name is not of that form."""
    return f"ARIB-{stem.upper().replace('_', '-')}" if _FILE_RULE.match(stem) else None


def validate_module(module: ModuleType) -> CheckSpec:
    """The CHECK of a module, or CheckDefinitionError naming what is wrong and the fix."""
    spec = getattr(module, "CHECK", None)
    name = module.__name__
    if not isinstance(spec, CheckSpec):
        raise CheckDefinitionError(
            f"check module {name!r} defines no CHECK = CheckSpec(...); every module in "
            f"checks/ must define one (see checks/openai_agents/conc_001.py)"
        )
    if not spec.id or not ID_RULE.match(spec.id):
        raise CheckDefinitionError(
            f"check module {name!r} has id {spec.id!r}: an id looks like ARIB-AREA-001"
        )
    stem = name.rpartition(".")[2]
    if stem != file_stem(spec.id):
        raise CheckDefinitionError(
            f"check module {name!r} defines check {spec.id!r}: the rule: a check module is "
            f"named by its id (the registry finds a check by its file name, importing no other "
            f"check); fix: rename {stem}.py to {file_stem(spec.id)}.py, or give its CheckSpec "
            f"the id {_id_of_stem(stem) or 'its file name stands for'}"
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
    for fault in spec.parity:
        module_, _, attribute = getattr(fault, "step", "").partition(":")
        if not isinstance(fault, ParityFault) or not fault.name.startswith("fault_") \
                or not module_ or not attribute.isidentifier():
            raise CheckDefinitionError(
                f"check {spec.id!r} in {name!r} has parity fault {fault!r}: each is a "
                f"ParityFault('fault_<what>', domain, description, 'module:StepClass'); "
                f"fix its parity=(...)")
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


def _packages(package: str | None) -> tuple[str, ...]:
    """``package``; or, when None, the active family's checks and the user's own packages
    (``arib.checks`` entry points named by the family)."""
    if package:
        return (package,)
    family = active_family()
    return (family.checks, *extension_packages(CHECKS_GROUP, family.name))


def _check_modules(package: str) -> list[str]:
    """The name of every check module of ``package``, sorted, without importing them (the
    package itself is imported): every module but its helpers (``_name``) and subpackages; a
    module (a user's entry point may name one) stands for itself."""
    try:
        pkg = importlib.import_module(package)
    except Exception as exc:
        raise CheckDefinitionError(
            f"check package {package!r} cannot be imported: {type(exc).__name__}: {exc}; fix "
            f"it (`python -c 'import {package}'` shows the traceback) or uninstall the package "
            f"that registers it in {CHECKS_GROUP!r}") from None
    if not hasattr(pkg, "__path__"):
        return [package]
    return [f"{package}.{info.name}"
            for info in sorted(pkgutil.iter_modules(pkg.__path__), key=lambda i: i.name)
            if not info.ispkg and not info.name.startswith("_")]


def check_index(package: str | None = None) -> dict[str, str]:
    """Check id -> module name of ``package`` (default: the active family's checks and the
    user's own packages), read from the modules' file names: nothing is imported or opened. A
    module whose file name is not of a check id's form is left out here and refused by
    ``load_checks``; two modules of one id (a user's and the family's) are refused."""
    index: dict[str, str] = {}
    for name in (m for p in _packages(package) for m in _check_modules(p)):
        check_id = _id_of_stem(name.rpartition(".")[2])
        if check_id in index:
            raise CheckDefinitionError(
                f"two checks have id {check_id!r}: {index[check_id]!r} and {name!r}; the "
                f"rule: a check id is one check; give the user's check a new id")
        if check_id is not None:
            index[check_id] = name
    return dict(sorted(index.items()))


def check_ids(package: str | None = None) -> frozenset[str]:
    """Every check id of ``package`` (default: the active family's), from its index."""
    return frozenset(check_index(package))


def load_checks(package: str | None = None) -> tuple[CheckSpec, ...]:
    """Every check in ``package`` (default: the active family's checks and the user's own
    packages), sorted by id; a module not named by its check's id is an error, and so are two
    modules of one id."""
    check_index(package)  # two modules of one id are refused before any is imported
    found = [validate_module(_import_check(name))
             for name in (m for p in _packages(package) for m in _check_modules(p))]
    return tuple(sorted(found, key=lambda spec: spec.id))


def get_check(check_id: str, checks: tuple[CheckSpec, ...] | None = None,
              package: str | None = None) -> CheckSpec:
    """The check with ``check_id``: from ``checks`` when given, else from ``package`` (default:
    the active family's checks and the user's own packages), importing its module only. An
    unknown id raises UnknownNameError naming it and listing the known ids."""
    if checks is not None:
        for spec in checks:
            if spec.id == check_id:
                return spec
        known = [c.id for c in checks]
        where = "the checks given"
    else:
        index = check_index(package)
        if check_id in index:
            return validate_module(_import_check(index[check_id]))
        known = list(index)
        where = (f"{', '.join(_packages(package))}, whose module files are named by the ids "
                 f"(ARIB-AREA-001: area_001.py)")
    raise UnknownNameError(
        f"unknown check id {check_id!r}: the rule: a check id names a check of {where}; "
        f"fix: use one of {', '.join(known)}"
    )
