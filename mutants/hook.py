"""Serve a mutated module source through an import hook, in this (child) process only.

``serve_mutated_module(name, source)`` puts a finder first on ``sys.meta_path`` that answers
for ``name`` with ``source``, drops ``name`` and every already-imported module of the same
top-level package that holds objects defined in it (e.g. a subclass module) from
``sys.modules``, and imports them again, so that every later lookup of a backend class gets
the mutated one. A package ``__init__`` that merely re-exports such objects is not executed
again: its names are rebound to the new objects (re-executing it would leave two package
objects, one of them without its submodules).

Nothing is written anywhere: the mutated code is compiled in memory under the file name
``<mutant /real/path.py>``, and ``linecache`` holds its lines under that name and under the
real path, so tracebacks and ``inspect.getsource`` show the mutated lines while the module's
``__file__`` stays the real path.

``edited_source(name, original, replacement)`` makes one textual edit of an installed module's
source (``arib.ground.sources.installed_source``, the generator's input too): the parity gate's
generated-style mutants.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import linecache
import os
import sys
import types
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from arib.ground.errors import MutantDefinitionError
from arib.ground.sources import installed_source
from arib.mutants.swap import UnitSwap, swap_in


class MutantFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds and loads one module from an in-memory source instead of its file."""

    def __init__(self, module_name: str, source: str, path: str) -> None:
        self.module_name = module_name
        self.source = source
        self.path = path

    @property
    def filename(self) -> str:
        """The code's file name, as tracebacks show it."""
        return f"<mutant {self.path}>"

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None = None,
        target: types.ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        """A spec loaded by this finder for its one module; None for every other."""
        if fullname != self.module_name:
            return None
        is_package = os.path.basename(self.path) == "__init__.py"
        spec = importlib.util.spec_from_loader(fullname, self, origin=self.path,
                                               is_package=is_package)
        assert spec is not None
        spec.has_location = True  # sets __file__ to the real path
        if is_package:
            spec.submodule_search_locations = [os.path.dirname(self.path)]
        return spec

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType | None:
        """None: the default module creation."""
        return None

    def exec_module(self, module: types.ModuleType) -> None:
        """Run the in-memory source in ``module``, under this finder's file name."""
        code = compile(self.source, self.filename, "exec", dont_inherit=True)
        exec(code, module.__dict__)  # noqa: S102 - the point of the hook

    def get_source(self, fullname: str) -> str | None:
        """The in-memory source for this finder's module; None for every other."""
        return self.source if fullname == self.module_name else None

    def is_package(self, fullname: str) -> bool:
        """Whether the module's real path is a package's ``__init__.py``."""
        return os.path.basename(self.path) == "__init__.py"


def _real_path(module_name: str) -> str:
    module = sys.modules.get(module_name)
    path = getattr(module, "__file__", None)
    if path is None:
        spec = importlib.util.find_spec(module_name)
        path = spec.origin if spec is not None else None
    if not path:
        raise ImportError(f"cannot find the installed file of module {module_name!r}")
    return os.path.abspath(path)


def _defined_in(value: Any) -> str | None:
    """The module a class, function or module object belongs to (None for anything else)."""
    try:
        if isinstance(value, types.ModuleType):
            return value.__name__
        if isinstance(value, (type, types.FunctionType)):
            return value.__module__
    except Exception:  # noqa: BLE001 - an odd object is simply not a dependency
        return None
    return None


def _dependents(module_name: str) -> tuple[list[str], list[str]]:
    """Modules to import again, and packages to refresh, after ``module_name`` changes.

    Remembered per set of loaded modules of that package: a parent that calls it before
    forking (see ``prepare``) saves every child the scan of each module's globals.
    """
    root = module_name.split(".")[0]
    key = (module_name, tuple(n for n in sys.modules if n == root or n.startswith(root + ".")
                              or n in _WATCHED))
    if key not in _DEPENDENTS:
        if len(_DEPENDENTS) >= 64:
            _DEPENDENTS.clear()
        _DEPENDENTS[key] = _scan_dependents(module_name)
    reimport, refresh = _DEPENDENTS[key]
    return list(reimport), list(refresh)


_DEPENDENTS: dict[tuple[str, tuple[str, ...]], tuple[list[str], list[str]]] = {}
# Modules outside a mutated module's package that may be built on it: a user's factory
# module importing the store class it returns (arib.survey.user).
_WATCHED: set[str] = set()


def watch(module_name: str) -> None:
    """Scan ``module_name`` too, besides a mutated module's own package, and rebind its names
    of the mutated module's objects in place (call it in the parent, before any fork)."""
    _WATCHED.add(module_name)


def prepare(module_name: str) -> None:
    """In a parent about to fork: work out now what serving a mutant of ``module_name`` needs."""
    if module_name in sys.modules:
        _dependents(module_name)


def _scan_dependents(module_name: str) -> tuple[list[str], list[str]]:
    """Scan every loaded module of the same package for ``_dependents``.

    Only modules of the same top-level package, and the watched ones (``watch``), are
    considered. A module depends on the changed set when one of its globals is a class,
    function or module of that set; a re-imported module joins the set (its own classes
    change), a package or a watched module does not (its names are rebound in place, so that
    the functions it holds, a user's factory, see the new objects).
    """
    root = module_name.split(".")[0]
    names = [n for n, mod in list(sys.modules.items())
             if mod is not None and n != module_name
             and (n == root or n.startswith(root + ".") or n in _WATCHED)]
    changed = {module_name}
    reimport: list[str] = []
    refresh: list[str] = []
    grew = True
    while grew:
        grew = False
        for name in names:
            if name in reimport or name in refresh:
                continue
            module = sys.modules[name]
            if not any(_defined_in(v) in changed for v in list(vars(module).values())):
                continue
            grew = True
            if hasattr(module, "__path__") or name in _WATCHED:  # rebound, not re-executed
                refresh.append(name)
            else:
                reimport.append(name)
                changed.add(name)
    order = {n: i for i, n in enumerate(sys.modules)}
    return sorted(reimport, key=order.__getitem__), sorted(refresh, key=order.__getitem__)


def _counterpart(value: Any) -> Any:
    """The object that now stands where ``value`` stood (same module name and qualname)."""
    if isinstance(value, types.ModuleType):
        return sys.modules.get(value.__name__, value)
    module = sys.modules.get(value.__module__)
    found: Any = module
    for part in getattr(value, "__qualname__", "").split("."):
        found = getattr(found, part, None)
        if found is None:
            return value
    return found


@contextmanager
def _no_bytecode() -> Iterator[None]:
    """Re-imports never write .pyc files next to the installed package."""
    saved = sys.dont_write_bytecode
    sys.dont_write_bytecode = True
    try:
        yield
    finally:
        sys.dont_write_bytecode = saved


def _remember_lines(finder: MutantFinder) -> None:
    lines = finder.source.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    for name in (finder.filename, finder.path):
        # mtime None: linecache.checkcache keeps the entry instead of re-reading the file.
        linecache.cache[name] = (len(finder.source), None, lines, name)


def edited_source(module: str, original: str, replacement: str) -> str:
    """The installed source of ``module`` with its one occurrence of ``original`` replaced.

    The original text must occur exactly once; else ``MutantDefinitionError`` names the edit,
    the file and the count.
    """
    origin, source = installed_source(module)
    count = source.count(original)
    if count != 1:
        raise MutantDefinitionError(
            f"mutant edit {original!r} -> {replacement!r} must match exactly once in {origin!r} "
            f"but matches {count} times; make the original text more specific"
        )
    return source.replace(original, replacement, 1)


def serve_mutated_function(module_name: str, source: str, swap: UnitSwap) -> bool:
    """Make the imported ``module_name`` run the one function ``swap`` changed (``source`` is
    the whole mutated module); False, changing nothing, where only re-executing the module
    is exact (see ``arib.mutants.swap``). A later fresh import of the module gets ``source``."""
    if module_name not in sys.modules:
        return False
    path = _real_path(module_name)
    if not swap_in(module_name, swap, path, source):
        return False
    sys.meta_path[:] = [f for f in sys.meta_path
                        if not (isinstance(f, MutantFinder) and f.module_name == module_name)]
    sys.meta_path.insert(0, MutantFinder(module_name, source, path))
    return True


def serve_mutated_module(module_name: str, source: str) -> None:
    """Make ``module_name`` (and modules built on it) come from ``source`` in this process."""
    path = _real_path(module_name)
    finder = MutantFinder(module_name, source, path)
    sys.meta_path[:] = [f for f in sys.meta_path
                        if not (isinstance(f, MutantFinder) and f.module_name == module_name)]
    sys.meta_path.insert(0, finder)
    _remember_lines(finder)

    if module_name not in sys.modules:
        return  # the first import will go through the finder
    reimport, refresh = _dependents(module_name)
    old = {name: sys.modules[name] for name in refresh}
    for name in (module_name, *reimport):
        del sys.modules[name]
    done: set[str] = set()
    with _no_bytecode():
        for name in (module_name, *reimport):
            if name not in sys.modules:
                importlib.import_module(name)
            done.add(name)
            # Rebind re-exports now, so that the next module importing through a package
            # (``from ...memory import SQLiteSession``) already gets the new object.
            for package in (old[p] for p in refresh):
                for attr, value in list(vars(package).items()):
                    if _defined_in(value) in done:
                        setattr(package, attr, _counterpart(value))
