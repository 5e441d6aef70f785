"""A user's own checks and hand-written mutants, found without editing this project.

A check author's package joins a family in two entry-point groups, each entry named by the
family it belongs to and naming a module or a package (every module of a package, but its
helpers ``_name``, is loaded, as the family's own packages are):

    [project.entry-points."arib.checks"]
    openai-agents = "my_checks"          # modules that each define CHECK = CheckSpec(...)
    [project.entry-points."arib.mutants"]
    openai-agents = "my_checks.mutants"  # modules that register @handwritten mutants

Hand-written mutants can also come from files named in ``$ARIB_MUTANTS`` (paths separated by
``os.pathsep``; ``python -m arib --mutants PATH`` sets it): each file is imported under a name
of its own, for the active family, in every child process too (children inherit it). Such
checks and mutants are judged by the same rules as the project's own (arib.checks.registry,
arib.mutants.registry). This ground floor imports nothing of checks/ or mutants/.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import importlib.util
import os
import pkgutil
import sys
from importlib import metadata
from pathlib import Path
from types import ModuleType

from arib.ground.errors import PluginError, UsageError

CHECKS_GROUP = "arib.checks"
MUTANTS_GROUP = "arib.mutants"
MUTANTS_VAR = "ARIB_MUTANTS"  # files of hand-written mutants, inherited by every child


@functools.cache
def extension_packages(group: str, family: str) -> tuple[str, ...]:
    """The modules or packages installed distributions register in ``group`` for ``family``
    (entries named by the family), sorted; an entry naming an attribute is refused. Read once
    per process."""
    found = []
    for ep in metadata.entry_points(group=group):
        if ep.name != family:
            continue
        dist = getattr(getattr(ep, "dist", None), "name", None) or "an unknown distribution"
        if ":" in ep.value or not all(part.isidentifier() for part in ep.value.split(".")):
            raise PluginError(
                f"entry point {ep.name!r} = {ep.value!r} of {dist!r} in {group!r} names no "
                f"module; the rule: it names a module or a package (\"my_checks\"), never an "
                f"attribute; fix {dist!r}'s entry point")
        found.append(ep.value)
    return tuple(sorted(set(found)))


def _import(name: str, group: str) -> ModuleType:
    try:
        return importlib.import_module(name)
    except Exception as exc:  # a plugin's import can fail any way: name it and its cause
        raise PluginError(
            f"{name!r}, registered in {group!r}, cannot be imported: {type(exc).__name__}: "
            f"{exc}; fix it (`python -c 'import {name}'` shows the traceback) or uninstall "
            f"the package that registers it") from None


def import_all(name: str, group: str) -> tuple[ModuleType, ...]:
    """Module ``name``, or every module of package ``name`` but its helpers (``_name``)."""
    module = _import(name, group)
    if not hasattr(module, "__path__"):
        return (module,)
    return tuple(_import(f"{name}.{info.name}", group)
                 for info in sorted(pkgutil.iter_modules(module.__path__), key=lambda i: i.name)
                 if not info.ispkg and not info.name.startswith("_"))


def mutant_paths() -> tuple[Path, ...]:
    """The files of hand-written mutants named in ``$ARIB_MUTANTS``; a path that is not a
    Python file is a UsageError naming it."""
    paths = tuple(Path(p).resolve() for p in os.environ.get(MUTANTS_VAR, "").split(os.pathsep)
                  if p)
    for path in paths:
        if path.suffix != ".py" or not path.is_file():
            raise UsageError(
                f"mutants file {str(path)!r} (from --mutants or ${MUTANTS_VAR}) is not an "
                f"existing .py file; the rule: name .py files that register @handwritten "
                f"mutants; fix the path")
    return paths


@functools.cache
def import_path(path: Path) -> ModuleType:
    """Import the file ``path`` once per process, as ``arib_user_mutants_<hash>_<stem>``
    (a name no other file takes, so two files with one name do not clash)."""
    digest = hashlib.sha256(str(path).encode()).hexdigest()[:8]
    name = f"arib_user_mutants_{digest}_{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise UsageError(f"mutants file {str(path)!r} cannot be imported; name a .py file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # the user's file can fail any way: name it and its cause
        del sys.modules[name]
        raise PluginError(
            f"mutants file {str(path)!r} cannot be imported: {type(exc).__name__}: {exc}; "
            f"fix it (`python {path}` shows the traceback)") from None
    return module


def user_mutant_modules(family: str) -> tuple[ModuleType, ...]:
    """Every module of ``family``'s mutants from outside the project: the ``arib.mutants``
    entry points named by the family, then the files of ``$ARIB_MUTANTS``."""
    modules = [m for name in extension_packages(MUTANTS_GROUP, family)
               for m in import_all(name, MUTANTS_GROUP)]
    return (*modules, *(import_path(path) for path in mutant_paths()))
