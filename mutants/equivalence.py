"""Trivial Compiler Equivalence for Python: mutants the compiler cannot tell apart.

Each mutated module is compiled, and the code object of the unit the mutant changes (the
method of the backend class, or the module-level helper, with every code object nested in
it) is reduced to what decides its behaviour: bytecode, constants (recursively, with their
types), names, local, free and cell variable names, flags, argument counts, stack size and
exception table. Line numbers, line and position tables and the file name are left out.

- A mutant whose unit reduces to the original's is ``equivalent``: "bytecode-identical".
- A mutant whose unit reduces to another mutant's is a ``duplicate`` of the one whose id
  sorts first; only that one is judged.
- Every other mutant, and one whose unit cannot be found or compiled, is judged as usual.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from types import CodeType
from typing import Any

from arib.ground.model import MutantStatus
from arib.mutants.base import MutantSpec

# CO_OPTIMIZED | CO_NEWLOCALS: set on function code, not on module or class-body code.
_FUNCTION_FLAGS = 0x1 | 0x2


@dataclass(frozen=True)
class Equivalence:
    """A mutant the compiler shows needs no run: equivalent, or a duplicate of ``of``."""

    mutant_id: str
    status: MutantStatus  # EQUIVALENT or DUPLICATE
    reason: str
    of: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The JSON form of this equivalence."""
        return {"mutant_id": self.mutant_id, "status": self.status.value,
                "reason": self.reason, "of": self.of}


def _const(value: Any) -> Any:
    """A constant with its type, so that 1, 1.0 and True (equal in Python) stay apart."""
    if isinstance(value, CodeType):
        return shape(value)
    if isinstance(value, (tuple, list)):
        return (type(value).__name__, tuple(_const(v) for v in value))
    if isinstance(value, frozenset):
        return ("frozenset", tuple(sorted(repr(_const(v)) for v in value)))
    if isinstance(value, float):
        return ("float", repr(value))  # -0.0 and 0.0, nan
    return (type(value).__name__, value)


def shape(code: CodeType) -> tuple[Any, ...]:
    """What a code object does, without where it sits: no lines, positions or file name."""
    return (
        code.co_name,
        code.co_code,
        tuple(_const(c) for c in code.co_consts),
        code.co_names,
        code.co_varnames,
        code.co_freevars,
        code.co_cellvars,
        code.co_flags,
        code.co_argcount,
        code.co_posonlyargcount,
        code.co_kwonlyargcount,
        code.co_stacksize,
        getattr(code, "co_exceptiontable", b""),  # 3.11+; offsets only
    )


def unit_name(qualname: str) -> str:
    """The unit a qualified name sits in: ``C.m.<locals>.f`` -> ``C.m``; ``helper`` -> itself."""
    parts = [p for p in qualname.split(".") if p != "<locals>"]
    return ".".join(parts[:2]) if len(parts) > 1 else parts[0]


def unit_codes(module_code: CodeType, qualname: str) -> tuple[CodeType, ...]:
    """The code objects of the unit ``qualname`` names (all defs of that name, in order).

    Walks class bodies by name down to the first function: a property's getter and setter,
    or overloads, share a name and are all returned.
    """
    scope = module_code
    for name in (p for p in qualname.split(".") if p != "<locals>"):
        found = tuple(c for c in scope.co_consts
                      if isinstance(c, CodeType) and c.co_name == name)
        if not found:
            return ()
        functions = tuple(c for c in found if c.co_flags & _FUNCTION_FLAGS == _FUNCTION_FLAGS)
        if functions:
            return functions
        scope = found[0]  # a class body: look inside it
    return ()


# Memoized: lanes built on one module share their mutants (one source object each), so a
# survey of every lane compiles each mutated module once, not once per lane.
@functools.cache
def _fingerprint(source: str, qualname: str, filename: str) -> str | None:
    try:
        module_code = compile(source, filename, "exec", dont_inherit=True)
    except (SyntaxError, ValueError):
        return None
    codes = unit_codes(module_code, unit_name(qualname))
    if not codes:
        return None
    return hashlib.sha256(repr(tuple(shape(c) for c in codes)).encode()).hexdigest()


def classify(original: str, mutants: Sequence[MutantSpec],
             filename: str = "<module>") -> dict[str, Equivalence]:
    """Equivalent and duplicate mutants among ``mutants`` of the module ``original``.

    Mutants without a mutated ``source`` (hand-written overrides) are not compared.
    """
    out: dict[str, Equivalence] = {}
    groups: dict[tuple[str, str], list[str]] = {}
    for mutant in mutants:
        if mutant.source is None:
            continue
        unit = unit_name(mutant.qualname)
        mutated = _fingerprint(mutant.source, mutant.qualname, filename)
        if mutated is None:
            continue
        if mutated == _fingerprint(original, mutant.qualname, filename):
            out[mutant.id] = Equivalence(
                mutant.id, MutantStatus.EQUIVALENT,
                f"bytecode-identical: the compiled {unit} equals the original's")
            continue
        groups.setdefault((unit, mutated), []).append(mutant.id)
    for (unit, _), ids in groups.items():
        first, *rest = sorted(ids)
        for mutant_id in rest:
            out[mutant_id] = Equivalence(
                mutant_id, MutantStatus.DUPLICATE,
                f"bytecode-identical to {first}: the compiled {unit} is the same", of=first)
    return out


def representatives(mutants: Iterable[MutantSpec],
                    found: dict[str, Equivalence]) -> tuple[MutantSpec, ...]:
    """The mutants that need a run: neither equivalent nor a duplicate."""
    return tuple(m for m in mutants if m.id not in found)
