"""Install a generated mutant by swapping one function's code in place, when that is exact.

A generated mutant changes the body of one function (a method of the backend class, or a
module-level helper it calls) and nothing else of its module. Re-executing the whole
mutated module in the child (``arib.mutants.hook.serve_mutated_module``) compiles every line of
it and imports again every module built on it; this swaps the changed function's
``__code__`` instead, on the very function object the module, the class, its subclasses and
every importer already hold, so they all run the mutated body.

It is used only where it is the same as re-executing the module:

- the generator found the mutated unit where the original stood (same first line) and its
  decorators, signature and defaults unchanged (``UnitSwap`` is made only then);
- the child finds exactly one function of that name in the compiled unit, and the installed
  function it replaces was compiled from the same file, at the same first line, with the
  same name and the same free variables (a method that uses ``super()`` keeps the cell of
  its real class).

Anything else returns False, and the caller re-executes the module. Tracebacks show the
mutated lines: the code is compiled under the name ``<mutant /real/path.py>``, which
``linecache`` holds with the mutated module's text.
"""

from __future__ import annotations

import ast
import linecache
import sys
import types
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class UnitSwap:
    """One mutated function, ready to replace the installed function's code.

    ``text`` is the mutated unit padded with blank lines so that its lines are those of the
    mutated module, under a ``class <scope>:`` header when it is a method (so private names
    are mangled as in the real class).
    """

    scope: str  # the class that defines it; "" at module level
    name: str
    text: str
    flags: int  # the module's __future__ compiler flags

    def code(self, filename: str) -> types.CodeType | None:
        """The mutated function's code object; None unless exactly one function has the name."""
        module_code = compile(self.text, filename, "exec", flags=self.flags, dont_inherit=True)
        holder = module_code
        if self.scope:
            holder_found = _only(module_code, self.scope)
            if holder_found is None:
                return None
            holder = holder_found
        return _only(holder, self.name)


def import_lines(source: str) -> dict[int, str]:
    """The lines (1-based) of the module's imports outside functions and classes, each
    import moved to column 0.

    Compiled above a unit, at their own lines, they make the unit compile to the same code
    as in its module: CPython compiles ``module.attr()`` differently when ``module`` was
    bound by an import. They are only compiled, never run.
    """
    lines = source.splitlines()
    found: dict[int, str] = {}
    pending: list[ast.stmt] = list(ast.parse(source).body)
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            end = node.end_lineno or node.lineno
            found[node.lineno] = lines[node.lineno - 1][node.col_offset:]
            found.update((n, lines[n - 1]) for n in range(node.lineno + 1, end + 1))
        elif not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            for body in ("body", "orelse", "finalbody", "handlers"):
                pending.extend(getattr(node, body, ()))
    return found


def unit_swap(scope: str, name: str, unit_text: str, first_line: int, flags: int,
              imports: dict[int, str]) -> UnitSwap:
    """The swap of a unit whose text starts at ``first_line`` (1-based) of its module, whose
    imports are ``imports`` (``import_lines``)."""
    header = f"class {scope}:\n" if scope else ""
    padding = first_line - (2 if scope else 1)
    above = "".join(imports.get(n, "") + "\n" for n in range(1, padding + 1))
    return UnitSwap(scope, name, above + header + unit_text, flags)


def _only(code: types.CodeType, name: str) -> types.CodeType | None:
    found = [c for c in code.co_consts if isinstance(c, types.CodeType) and c.co_name == name]
    return found[0] if len(found) == 1 else None


def _installed_function(module: types.ModuleType, swap: UnitSwap) -> types.FunctionType | None:
    """The function object the module's unit defined (through staticmethod, classmethod and
    ``functools.wraps`` wrappers); None when it cannot be told apart."""
    owner: Any = module
    if swap.scope:
        owner = vars(module).get(swap.scope)
        if not isinstance(owner, type):
            return None
    value = vars(owner).get(swap.name)
    if isinstance(value, (staticmethod, classmethod)):
        value = value.__func__
    seen = 0
    while not isinstance(value, types.FunctionType) or value.__code__.co_name != swap.name:
        value = getattr(value, "__wrapped__", None)
        seen += 1
        if value is None or seen > 8:
            return None
    return value


def swap_in(module_name: str, swap: UnitSwap, path: str, source: str) -> bool:
    """Swap the mutated function's code into the imported module ``module_name``.

    ``path`` is the module's real file and ``source`` the whole mutated module (for
    tracebacks). False, changing nothing, when the swap would not be exact (see the module
    docstring); the caller then re-executes the module.
    """
    module = sys.modules.get(module_name)
    if module is None or getattr(module, "__file__", None) is None:
        return False
    function = _installed_function(module, swap)
    if function is None:
        return False
    filename = f"<mutant {path}>"
    try:
        new = swap.code(filename)
    except (SyntaxError, ValueError):
        return False
    old = function.__code__
    if (new is None or old.co_filename != path or old.co_firstlineno != new.co_firstlineno
            or old.co_freevars != new.co_freevars
            or getattr(old, "co_qualname", None) != getattr(new, "co_qualname", None)):
        return False
    lines = source.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    # mtime None: linecache.checkcache keeps the entry instead of looking for the file.
    linecache.cache[filename] = (len(source), None, lines, filename)
    function.__code__ = new
    return True
