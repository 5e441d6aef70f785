"""What a check's clean run executed outside this project, named as inputs of a cache key.

The survey's recorder (``arib.survey.coverage``) writes, besides the lines of the lane's module,
``code LINE FILE`` for every function of an installed distribution (a file under a
``site-packages`` folder) the first time it starts, and after the check ``ext FILE`` for every
loaded extension module of one and then ``end``. ``Executed`` is what those lines say;
``named_inputs`` turns it into the parts of a verdict key:

- each executed function of the family's own distribution (the SDK; for a family of several
  components, each component's distribution, e.g. langgraph-checkpoint, -sqlite and -postgres)
  by its source: the source
  of its outermost enclosing ``def`` (a nested function, a decorator's wrapper, is judged with
  the function that makes it), of a method every function of its class (a superset, so still
  sound, and stable: which methods a racing check reaches, a retry path, varies from run to
  run), and, per file, the module's code outside every function (imports, constants, class
  attributes: what the functions read);
- every other installed distribution whose Python code ran by its version, and so each loaded
  extension module's distribution that one of those (or the SDK) requires (an extension
  module another lane loaded, that no code which ran can call, is left out).

A file's distribution is the one whose RECORD lists it (so a namespace package several
distributions share, ``langgraph``, is no obstacle), else the only owner of its top-level name.
Every file is named relative to the folder it was installed in, never by absolute path, so a
key made on one machine is the same on another. What cannot be named (a file not found, a
source that does not parse, a distribution without a version, a run that never wrote
``end``) makes the whole set ``None``: such a pair falls back to a key bound to the SDK's
version, and is never reused across versions.

Limits, stated: what the clean run executed is what is named. A mutant that sends the check
down a path the clean run never took (an error handler in another SDK file) runs code that is
not named; and code that ran only when the SDK was imported (before the clean run's recorder
started) is named only through its file's module-level code when a function of that file ran.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import importlib.metadata
import itertools
import os
import re
import site
import sys
import sysconfig
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

EXTENSION_SUFFIXES = (".so", ".pyd")


@functools.cache
def _roots() -> tuple[str, ...]:
    """The folders installed distributions live in (site-packages), longest first."""
    found = {sysconfig.get_paths()[k] for k in ("purelib", "platlib")}
    found.update(site.getsitepackages() if hasattr(site, "getsitepackages") else ())
    return tuple(sorted((str(Path(p)) + "/" for p in found), key=len, reverse=True))


def installed_file(filename: str) -> str | None:
    """``filename`` relative to its site-packages folder, or None when it is not installed
    (cheap: the recorder calls it in the child for every function that starts)."""
    for root in _roots():
        if filename.startswith(root):
            return filename[len(root):]
    return None


@dataclass(frozen=True)
class Executed:
    """What one check's clean runs executed in installed distributions (absolute files)."""

    functions: frozenset[tuple[str, int]]  # (file, first line) of each code object started
    extensions: frozenset[str]  # files of the extension modules loaded

    def __or__(self, other: Executed) -> Executed:
        return Executed(self.functions | other.functions, self.extensions | other.extensions)


def loaded_extensions() -> list[str]:
    """The files of the loaded extension modules of installed distributions (sorted)."""
    # vars(), not getattr: a module's __getattr__ (a deprecation shim) would run its code
    files = {vars(m).get("__file__") for m in list(sys.modules.values())
             if hasattr(m, "__dict__")}
    return sorted(f for f in files if isinstance(f, str) and f.endswith(EXTENSION_SUFFIXES)
                  and installed_file(f) is not None)


@dataclass(frozen=True)
class Installation:
    """Where installed distributions live, which files each installs, their versions and what
    each requires (names as PEP 503 compares them); ``current()`` is this interpreter's."""

    roots: tuple[str, ...]  # site-packages folders, each ending in "/", longest first
    owners: Mapping[str, tuple[str, ...]]  # top-level import name -> its distributions
    versions: Mapping[str, str]
    requires: Mapping[str, frozenset[str]]
    # installed file (relative to its site-packages) -> its distribution, from the RECORDs:
    # what names a file in a namespace package several distributions share (``langgraph``)
    files: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    @functools.cache
    def current(cls) -> Installation:
        """The installation this interpreter runs (read once per process)."""
        versions: dict[str, str] = {}
        requires: dict[str, frozenset[str]] = {}
        found: dict[str, dict[str, None]] = {}
        files: dict[str, str] = {}
        for dist in importlib.metadata.distributions():
            name = _normal(dist.metadata["Name"] or "")
            versions.setdefault(name, dist.version)
            requires.setdefault(name, _required(dist.requires or []))
            # Each top-level name the distribution's RECORD installs: Python 3.10's
            # packages_distributions() reads only top_level.txt, which some wheels lack
            # (cryptography's), so its extension modules would have no owner.
            for file in dist.files or ():
                top = file.parts[0] if file.parts else ""
                if top and not top.endswith((".dist-info", ".egg-info", ".data", "..")):
                    found.setdefault(top.split(".", 1)[0], {})[name] = None
                    files.setdefault(file.as_posix(), name)
        for top, dists in importlib.metadata.packages_distributions().items():
            for dist_name in dists:
                found.setdefault(top, {})[_normal(dist_name)] = None
        owners = {top: tuple(dists) for top, dists in found.items()}
        return cls(_roots(), owners, versions, requires, files)

    def relative(self, filename: str) -> str | None:
        """``filename`` relative to its site-packages folder, or None when not installed."""
        for root in self.roots:
            if filename.startswith(root):
                return filename[len(root):]
        return None

    def distribution(self, relative: str) -> str | None:
        """The distribution that installed ``relative`` (normalized name), or None."""
        if relative in self.files:
            return self.files[relative]
        name = relative.split("/", 1)[0].removesuffix(".py").split(".", 1)[0]
        owners = self.owners.get(name, ())
        return _normal(owners[0]) if len(owners) == 1 else None


def _required(requirements: Iterable[str]) -> frozenset[str]:
    """The distributions named by requirements that hold whatever extras are chosen: the
    only ones whose extension modules a distribution's code can count on calling."""
    return frozenset(_normal(m.group(0)) for r in requirements if "extra ==" not in r
                     for m in [re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", r)] if m)


def _normal(dist: str) -> str:
    """A distribution's name as PEP 503 compares it."""
    return re.sub(r"[-_.]+", "-", dist).lower()


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)


@dataclass(frozen=True)
class _FileIndex:
    """One source file: its module-level code's hash and its outermost functions' spans."""

    skeleton: str
    functions: tuple[tuple[int, int, str, str], ...]  # (first, last line, qualname, hash)

    def unit_at(self, line: int) -> dict[str, str]:
        """The functions named when ``line`` runs: the outermost function holding it, or for
        a method every function of its class (which of a class's methods a racing check
        reaches varies from run to run; its whole class does not); none for module code."""
        for first, last, qualname, _ in self.functions:
            if first <= line <= last:
                owner, dot, _name = qualname.rpartition(".")
                return {q: d for _, _, q, d in self.functions
                        if (q.startswith(owner + ".") if dot else q == qualname)}
        return {}


def _outermost(tree: ast.Module) -> list[tuple[ast.AST, str]]:
    """Every function not inside another function, with its qualified name."""
    found: list[tuple[ast.AST, str]] = []
    pending: list[tuple[ast.AST, str]] = [(tree, "")]
    while pending:
        node, prefix = pending.pop()
        for child in ast.iter_child_nodes(node):
            if isinstance(child, _DEFS):
                found.append((child, prefix + child.name))
            elif isinstance(child, ast.ClassDef):
                pending.append((child, f"{prefix}{child.name}."))
            elif not isinstance(child, ast.expr):
                pending.append((child, prefix))
    return found


@functools.cache
def _index(filename: str) -> _FileIndex | None:
    """The index of an installed source file, or None when it cannot be read or parsed."""
    try:
        source = Path(filename).read_text(encoding="utf-8")
        tree = ast.parse(source)
    except (OSError, SyntaxError, ValueError):
        return None
    lines = source.splitlines(keepends=True)
    spans = []
    seen: dict[str, int] = {}
    for node, qualname in sorted(_outermost(tree), key=lambda found: _span(found[0])):
        first, last = _span(node)
        # A name defined again (a property's setter after its getter, a function redefined)
        # is named by its position, so that neither definition hides the other.
        seen[qualname] = seen.get(qualname, 0) + 1
        name = qualname if seen[qualname] == 1 else f"{qualname}#{seen[qualname]}"
        spans.append((first, last, name, _digest("".join(lines[first - 1:last]))))
    # The module's code without its functions, as syntax (no lines, comments or blank lines):
    # a function added or changed elsewhere in the file leaves it as it is; a constant, an
    # import or a class attribute changes it.
    rest = ast.dump(_WithoutFunctions().visit(tree), include_attributes=False)
    return _FileIndex(_digest(rest), tuple(sorted(spans)))


class _WithoutFunctions(ast.NodeTransformer):
    """Drops every function definition (a file's functions are named one by one)."""

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:  # noqa: N802 - ast's naming
        return None

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> None:  # noqa: N802
        return None


def _span(node: ast.AST) -> tuple[int, int]:
    """The first (its first decorator's) and last line of a function definition."""
    assert isinstance(node, _DEFS)
    first = min([d.lineno for d in node.decorator_list] + [node.lineno])
    return first, node.end_lineno or node.lineno


@functools.lru_cache(maxsize=64)  # an installed module's source: parsed once, not per name
def _outermost_spans(source: str) -> tuple[tuple[str, tuple[int, int]], ...] | None:
    """Every outermost function of ``source`` with its character offsets (decorators
    included), in ``_outermost`` order; None when it does not parse."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    ends = list(itertools.accumulate(map(len, source.splitlines(keepends=True)), initial=0))
    spans = []
    for node, name in _outermost(tree):
        first, last = (min(n, len(ends) - 1) for n in _span(node))  # as slices would clamp
        spans.append((name, (ends[max(first - 1, 0)], ends[last])))
    return tuple(spans)


def function_span(source: str, qualname: str) -> tuple[int, int] | None:
    """Where the outermost function holding ``qualname`` lies in ``source`` (character
    offsets, decorators included), or None when it does not parse or holds no such function."""
    for name, span in _outermost_spans(source) or ():
        if name == qualname or qualname.startswith(name + ".<locals>"):
            return span
    return None


def function_source_hash(source: str, qualname: str) -> str | None:
    """The hash of the outermost function ``qualname`` in ``source`` (decorators included),
    or None when ``source`` does not parse or holds no such function."""
    span = function_span(source, qualname)
    return None if span is None else _digest(source[span[0]:span[1]])


def changed_function_hash(original: str, mutated: str, qualname: str) -> str | None:
    """``function_source_hash(mutated, qualname)`` for a ``mutated`` that differs from
    ``original`` only inside that function: cut at the original's span, never parsed (a
    survey keys hundreds of mutants of one module); any other change is parsed."""
    span = function_span(original, qualname)
    if span is not None:
        start, end = span
        stop = len(mutated) - (len(original) - end)
        if stop >= start and mutated[:start] == original[:start] and (
                mutated[stop:] == original[end:]):
            return _digest(mutated[start:stop])
    return function_source_hash(mutated, qualname)


def named_inputs(executed: Executed | None, sdk: str | Collection[str],
                 where: Installation | None = None) -> dict[str, Any] | None:
    """The key parts for what ``executed`` ran (see the module docstring), or None when
    any of it cannot be named. ``sdk`` is the family's distribution (or distributions, for a
    family of several components), named by function; ``where`` the installation the files
    belong to (this interpreter's by default)."""
    if executed is None:
        return None
    where = where or Installation.current()
    by_source = {_normal(sdk)} if isinstance(sdk, str) else {_normal(d) for d in sdk}
    functions: dict[str, dict[str, str]] = {}
    versions: dict[str, str] = {}
    ran: set[str] = set()  # distributions whose code ran
    for filename, line in sorted(executed.functions):
        relative = where.relative(filename)
        dist = where.distribution(relative) if relative else None
        if relative is None or dist is None:
            return None
        ran.add(dist)
        if dist not in by_source:
            if dist not in where.versions:
                return None
            versions[dist] = where.versions[dist]
            continue
        index = _index(filename)
        if index is None:
            return None
        # module-level code (a class body) is named by the skeleton
        functions.setdefault(relative, {"<module>": index.skeleton}).update(index.unit_at(line))
    reach = ran.union(*(where.requires.get(d, frozenset()) for d in ran))
    for filename in sorted(executed.extensions):
        relative = where.relative(filename)
        dist = where.distribution(relative) if relative else None
        if dist is None:
            return None
        if dist not in reach:  # loaded for another lane; no code that ran can call it
            continue
        if dist not in where.versions:
            return None
        versions[dist] = where.versions[dist]
    return {"functions": functions, "distributions": dict(sorted(versions.items()))}


def inputs_unchanged(inputs: Mapping[str, Any], where: Installation | None = None) -> bool:
    """Whether ``inputs`` (``named_inputs`` of a run made on another SDK version, or machine)
    names this installation's code: each function and module body at the same installed file
    (relative to its site-packages folder) with the same source, each distribution at the
    same version. A file that is missing or does not parse, or a malformed ``inputs``, is a
    change."""
    where = where or Installation.current()
    try:
        for relative, named in inputs["functions"].items():
            # exactly one installed file by that name (a copy elsewhere could be shadowed)
            files = {os.path.realpath(root + relative) for root in where.roots
                     if os.path.isfile(root + relative)}
            index = _index(files.pop()) if len(files) == 1 else None
            if index is None:
                return False
            # what named_inputs would name now for these functions: a method's whole class
            # (a method added to it is a change), the module body
            now = {"<module>": index.skeleton}
            for first, _, qualname, _ in index.functions:
                if qualname in named:
                    now.update(index.unit_at(first))
            if now != dict(named):
                return False
        return all(where.versions.get(d) == v for d, v in inputs["distributions"].items())
    except (KeyError, TypeError, AttributeError):
        return False


def merge_executed(parts: Iterable[Executed | None]) -> Executed | None:
    """The union of several runs' records; None when any run's record is unknown."""
    total = Executed(frozenset(), frozenset())
    for part in parts:
        if part is None:
            return None
        total = total | part
    return total
