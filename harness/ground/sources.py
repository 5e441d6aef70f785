"""An installed module's source, read without running the module or its packages.

Cache keys and mutant generation read the source of a lane's backend module (e.g.
``agents.memory.sqlite_session``): ``module_source`` gives the text (OSError when there is
none, for a key that names what it could not read), ``installed_source`` the file and the text
(a MutantDefinitionError naming the fix when there is none, for what must mutate it). Finding
it with ``importlib.util.find_spec`` or reading it with ``inspect.getsource`` would import its
packages first (``agents/__init__.py`` imports the whole SDK, a second and a half), before any
run needs them. Here the import system's path finder looks for each package in turn and runs
none of them.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import sys
import tokenize
from pathlib import Path

from arib.ground.errors import MutantDefinitionError


def _origin(spec: importlib.machinery.ModuleSpec | None) -> Path | None:
    origin = spec.origin if spec is not None else None
    return Path(origin) if origin and origin.endswith(".py") and Path(origin).is_file() else None


def module_path(name: str) -> Path | None:
    """The source file of module ``name``, or None when it has none (a missing module, a
    compiled extension). An imported module answers from its spec; another is found by the
    path finder, package by package, without executing any package's ``__init__``; where the
    path finder cannot see the top-level package (an import hook of its own, an editable
    install), ``importlib`` finds it."""
    loaded = sys.modules.get(name)
    if loaded is not None:
        return _origin(getattr(loaded, "__spec__", None))
    parts = name.split(".")
    search: list[str] | None = None
    spec = None
    for depth in range(1, len(parts) + 1):
        prefix = ".".join(parts[:depth])
        package = sys.modules.get(prefix)
        if package is not None and depth < len(parts):
            search = list(getattr(package, "__path__", None) or [])
            continue
        try:
            spec = importlib.machinery.PathFinder.find_spec(prefix, search)
        except KeyError:  # a namespace package inside one that is not imported (_portions)
            if depth == len(parts):
                return None  # the module itself is a namespace package: no source file
            search = _portions(search, parts[depth - 1])
            continue
        if spec is None:  # not on the path: another finder may serve its top-level package
            return _found_by_import(name) if depth == 1 else None
        if depth < len(parts):
            search = _portions(search, parts[depth - 1], spec.submodule_search_locations)
    return _origin(spec)


def _portions(parent: list[str] | None, name: str, locations: object = None) -> list[str]:
    """Where the submodules of package ``name`` are: a regular package's folders (its
    ``locations``); else, for a namespace package (``langgraph``, ``langgraph.checkpoint``),
    the folders ``name`` in its parent's locations. A namespace package's own search path
    recomputes itself from its parent package's module, which is not imported here: the path
    finder then raises KeyError naming that parent."""
    if isinstance(locations, list):
        return list(locations)
    return [str(Path(base) / name) for base in (sys.path if parent is None else parent)
            if (Path(base) / name).is_dir()]


def _found_by_import(name: str) -> Path | None:
    try:
        return _origin(importlib.util.find_spec(name))
    except (ImportError, ValueError):
        return None


def module_source(name: str) -> str:
    """The text of module ``name``'s source file (decoded as Python decodes it), read without
    importing it; OSError when it has none."""
    path = module_path(name)
    if path is None:
        raise OSError(f"module {name!r} has no source file here")
    return _read(path)


def installed_source(name: str) -> tuple[str, str]:
    """The path and text of the installed module ``name`` (read only, never written; found
    without importing it or its packages); MutantDefinitionError when it is not installed as a
    source file."""
    path = module_path(name)
    if path is None:
        raise MutantDefinitionError(
            f"module {name!r} is not installed as a source file; install the SDK extra "
            f"that provides it"
        )
    return str(path), _read(path)


def _read(path: Path) -> str:
    with tokenize.open(path) as stream:
        return stream.read()
