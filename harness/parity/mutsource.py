"""A minimal mutated-source import for the parity gate's generated-style mutants (private).

``serve_edit(module, original, replacement)`` reads the installed module's source, applies one
textual edit (the original text must occur exactly once), executes the result as a fresh
module object, and puts it in ``sys.modules`` and on its parent package, so code that looks the
backend class up afterwards (``targets`` builders do) gets the mutated class. Nothing is ever
written to site-packages or anywhere else. Meant for a forked child process only: the edit
lasts for the life of the process.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from harness.ground.errors import MutantDefinitionError


def installed_source(module_name: str) -> tuple[str, str]:
    """The source text and file path of an installed module."""
    spec = importlib.util.find_spec(module_name)
    if spec is None or not spec.origin or not spec.origin.endswith(".py"):
        raise MutantDefinitionError(
            f"module {module_name!r} has no Python source file to mutate (spec {spec!r})"
        )
    return Path(spec.origin).read_text(encoding="utf-8"), spec.origin


def mutate_source(source: str, original: str, replacement: str, *, where: str) -> str:
    """``source`` with the single occurrence of ``original`` replaced."""
    count = source.count(original)
    if count != 1:
        raise MutantDefinitionError(
            f"mutant edit {original!r} -> {replacement!r} must match exactly once in {where!r} "
            f"but matches {count} times; make the original text more specific"
        )
    return source.replace(original, replacement, 1)


def serve_source(module_name: str, source: str) -> ModuleType:
    """Execute ``source`` as ``module_name`` and install it in place of the imported module."""
    spec = importlib.util.find_spec(module_name)
    if spec is None:
        raise MutantDefinitionError(f"cannot find module {module_name!r} to replace")
    module = importlib.util.module_from_spec(spec)
    code = compile(source, f"{spec.origin} [parity mutant]", "exec")
    previous = sys.modules.get(module_name)
    sys.modules[module_name] = module
    try:
        exec(code, module.__dict__)  # noqa: S102 - the point: run the mutated backend source
    except BaseException:
        if previous is not None:
            sys.modules[module_name] = previous
        raise
    parent_name, _, child = module_name.rpartition(".")
    if parent_name:
        setattr(importlib.import_module(parent_name), child, module)
    return module


def serve_edit(module_name: str, original: str, replacement: str) -> ModuleType:
    """Serve ``module_name`` with one textual edit of its installed source."""
    source, origin = installed_source(module_name)
    return serve_source(module_name, mutate_source(source, original, replacement, where=origin))
