"""Discovers check modules in checks/ and validates each definition.

A run imports only the checks it runs: ``get_check`` finds the module of an id in the
modules' text (``declared_ids``: every check module writes its id as a string literal, in
``CheckSpec(id="ARIB-...")`` or in a ``CHECK_ID = "ARIB-..."`` that the spec uses) and imports
that one module; ``load_checks`` imports them all (``list``, ``docs``, ``admit --all``, the
survey). Check modules import no backend distribution at module level (the SDK, drivers,
libcst): what a trial needs it imports itself, and ``CheckSpec.preload`` names what the parent
imports once before forking the check's runs (tests/test_registry.py holds both rules).
A user's own check package joins the active family's through an ``arib.checks`` entry point
named by the family (arib.ground.extensions): its checks are found and judged by the same rules.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import pkgutil
import re
from pathlib import Path
from types import ModuleType

from arib.checks.base import CheckSpec, ParityFault
from arib.ground.errors import CheckDefinitionError, UnknownNameError
from arib.ground.extensions import CHECKS_GROUP, extension_packages
from arib.ground.family import active_family
from arib.ground.schedule import ScheduleError

ID_RULE = re.compile(r"^ARIB-[A-Z]+-\d{3}$")
# ``CHECK = CheckSpec(id="ARIB-X-001"`` or ``CHECK = CheckSpec(id=NAME`` with ``NAME = "..."``.
_SPEC_ID = re.compile(r'^CHECK\s*=\s*CheckSpec\(\s*id\s*=\s*'
                      r'(?:(?P<q>["\'])(?P<literal>ARIB-[A-Z]+-\d{3})(?P=q)|(?P<name>[A-Za-z_]\w*)\s*,)',
                      re.M)


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


def _check_modules(package: str) -> list[tuple[str, Path | None]]:
    """(module name, source file) of every check module of ``package``, without importing
    them (the package itself is imported; a module stands for itself)."""
    try:
        pkg = importlib.import_module(package)
    except Exception as exc:
        raise CheckDefinitionError(
            f"check package {package!r} cannot be imported: {type(exc).__name__}: {exc}; fix "
            f"it (`python -c 'import {package}'` shows the traceback) or uninstall the package "
            f"that registers it in {CHECKS_GROUP!r}") from None
    if not hasattr(pkg, "__path__"):  # a user's entry point may name one module
        origin = getattr(pkg, "__file__", None)
        return [(package, Path(origin) if origin and origin.endswith(".py") else None)]
    found = []
    for info in sorted(pkgutil.iter_modules(pkg.__path__), key=lambda i: i.name):
        # every module of a family's checks package is a check, but its helpers (``_name``)
        if info.ispkg or info.name.startswith("_"):
            continue
        spec = importlib.util.find_spec(f"{package}.{info.name}")
        origin = spec.origin if spec is not None else None
        found.append((f"{package}.{info.name}",
                      Path(origin) if origin and origin.endswith(".py") else None))
    return found


def declared_id(path: Path | None) -> str | None:
    """The check id a check module's source declares (see the module docstring), or None
    when it declares none in that form."""
    try:
        stat = path.stat() if path is not None else None
    except OSError:
        return None
    return _declared_in(path, stat.st_mtime_ns, stat.st_size) if stat is not None else None


@functools.lru_cache(maxsize=1024)
def _declared_in(path: Path, mtime_ns: int, size: int) -> str | None:
    """``declared_id`` of one version of a file (read once per process)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    match = _SPEC_ID.search(text)
    if match is None:
        return None
    if match["literal"]:
        return match["literal"]
    named = re.search(rf'^{re.escape(match["name"])}\s*=\s*(["\'])(ARIB-[A-Z]+-\d{{3}})\1\s*$',
                      text, re.M)
    return named[2] if named else None


def declared_ids(package: str | None = None) -> dict[str, str] | None:
    """Check id -> module name, read from the check modules' text (nothing imported; default:
    the active family's checks and the user's own packages); None
    when a module declares no id that way or two declare one id (then only importing every
    module can tell, ``load_checks``)."""
    ids: dict[str, str] = {}
    for name, path in (m for p in _packages(package) for m in _check_modules(p)):
        check_id = declared_id(path)
        if check_id is None or check_id in ids:
            return None
        ids[check_id] = name
    return ids


def check_ids(package: str | None = None) -> frozenset[str]:
    """Every check id of ``package`` (default: the active family's), read without importing
    the checks where their modules declare them (``declared_ids``)."""
    declared = declared_ids(package)
    if declared is not None:
        return frozenset(declared)
    return frozenset(c.id for c in load_checks(package))


def load_checks(package: str | None = None) -> tuple[CheckSpec, ...]:
    """Every check in ``package`` (default: the active family's checks and the user's own
    packages), sorted by id; two checks with one id is an error."""
    found: dict[str, CheckSpec] = {}
    for name, _ in (m for p in _packages(package) for m in _check_modules(p)):
        spec = validate_module(_import_check(name))
        if spec.id in found:
            raise CheckDefinitionError(
                f"two checks have id {spec.id!r}: {found[spec.id].module!r} and "
                f"{spec.module!r}; give one of them a new id"
            )
        found[spec.id] = spec
    return tuple(found[k] for k in sorted(found))


def get_check(check_id: str, checks: tuple[CheckSpec, ...] | None = None) -> CheckSpec:
    """The check with ``check_id`` (from ``checks``, else the active family's, importing only
    its module); an unknown id raises UnknownNameError listing the known."""
    if checks is None:
        declared = declared_ids()
        if declared is not None and check_id in declared:
            spec = validate_module(_import_check(declared[check_id]))
            if spec.id != check_id:
                raise CheckDefinitionError(
                    f"check module {spec.module!r} declares id {check_id!r} in its source but "
                    f"its CHECK has id {spec.id!r}; give CheckSpec(id=...) the literal id, or "
                    f"a CHECK_ID = \"ARIB-...\" that CHECK uses")
            return spec
    pool = checks if checks is not None else load_checks()
    for spec in pool:
        if spec.id == check_id:
            return spec
    raise UnknownNameError(
        f"unknown check id {check_id!r}: use one of {', '.join(c.id for c in pool)}"
    )
