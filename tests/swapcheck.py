"""Shared by the swap tests of both families: does a swapped-in function's code equal the code
of the same function in the whole mutated module?"""

from __future__ import annotations

import types

from arib.mutants.generate import generate
from arib.targets.base import TargetSpec


def same_code(a: types.CodeType, b: types.CodeType) -> bool:
    """Same instructions, names, constants (nested code compared the same way) and place."""
    nested = [(x, y) for x, y in zip(a.co_consts, b.co_consts, strict=True)
              if isinstance(x, types.CodeType)]
    plain = [x for x in a.co_consts if not isinstance(x, types.CodeType)]
    return (a.co_code == b.co_code and a.co_names == b.co_names
            and a.co_varnames == b.co_varnames and a.co_freevars == b.co_freevars
            and a.co_firstlineno == b.co_firstlineno and a.co_filename == b.co_filename
            and plain == [x for x in b.co_consts if not isinstance(x, types.CodeType)]
            and all(same_code(x, y) for x, y in nested))


def _find(code: types.CodeType, qualname: str) -> types.CodeType:
    for part in qualname.split("."):
        (code,) = [c for c in code.co_consts
                   if isinstance(c, types.CodeType) and c.co_name == part]
    return code


def one_lane_per_module(lanes: tuple[TargetSpec, ...]) -> list[TargetSpec]:
    """The first lane of each backend module."""
    found: dict[str, TargetSpec] = {}
    for lane in lanes:
        found.setdefault(lane.module, lane)
    return list(found.values())


def swaps_are_exact(lane: TargetSpec) -> tuple[int, int]:
    """Assert that every swappable generated mutant of ``lane`` swaps in exactly the code the
    whole mutated module compiles to; (mutants, swappable)."""
    report = generate(lane)
    swappable = [m for m in report.mutants if m.swap is not None]
    for mutant in swappable:
        assert mutant.swap is not None and mutant.source is not None
        filename = "<mutant x>"
        whole = compile(mutant.source, filename, "exec", flags=mutant.swap.flags,
                        dont_inherit=True)
        unit = ".".join(p for p in (mutant.swap.scope, mutant.swap.name) if p)
        swapped = mutant.swap.code(filename)
        assert swapped is not None and same_code(swapped, _find(whole, unit)), mutant.id
    return len(report.mutants), len(swappable)
