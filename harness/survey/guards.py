"""Code a lane's construction rules out: branches behind a guard that is fixed on that lane.

``SQLiteSession(":memory:")`` never runs its file-database branches; a SQLAlchemySession on
PostgreSQL never runs its SQLite-only retry loop. A lane names such guards in
``TargetSpec.fixed_guards`` (the condition as the backend module writes it, its value on
every instance the lane builds, and why). From the module's syntax tree this module finds
the lines those guards exclude:

- the branch of an ``if`` whose test the guards decide (``not``, ``and`` and ``or`` of
  guards are decided as Python would; anything else is left alone);
- the statements after an ``if`` whose kept branch always leaves the function (``return``
  or ``raise`` as its last statement);
- a private function (``_name``) every reference of which in the module lies in excluded
  lines, to a fixpoint.

A generated mutant whose lines all lie there can never fire on the lane: ``not_applicable``.
The claim is checked twice: each guard is evaluated on a real instance of the lane
(``lane_guards``, in a child), and no clean run of a check may execute an excluded line;
either failing makes the lane an error naming the guard.
"""

from __future__ import annotations

import ast
import functools
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import anyio

from arib.targets.base import BuildContext, FixedGuard, TargetSpec


def normalize(expr: str) -> str:
    """The condition as ``ast.unparse`` writes it, so that quoting and spacing do not matter."""
    return ast.unparse(ast.parse(expr.strip(), mode="eval").body)


@dataclass(frozen=True)
class Excluded:
    """Lines a fixed guard rules out on a lane, with the guard that rules out each."""

    lines: Mapping[int, FixedGuard]

    def guard_of(self, lines: Iterable[int]) -> FixedGuard | None:
        """The guard that rules out all of ``lines`` (the first line's), or None."""
        found = [self.lines.get(line) for line in lines]
        if not found or any(g is None for g in found):
            return None
        return found[0]


def _truth(test: ast.expr, fixed: Mapping[str, FixedGuard]) -> FixedGuard | None:
    """The guard that decides ``test`` on the lane, with the value it decides: a FixedGuard
    whose ``value`` is the test's value; None when the guards do not decide it."""
    text = ast.unparse(test)
    if text in fixed:
        return fixed[text]
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        inner = _truth(test.operand, fixed)
        return None if inner is None else FixedGuard(inner.expr, not inner.value, inner.why)
    if isinstance(test, ast.BoolOp):
        decisive = isinstance(test.op, ast.Or)  # the operand value that decides the whole
        parts = [_truth(v, fixed) for v in test.values]
        for part in parts:
            if part is not None and part.value is decisive:
                return part
        if all(p is not None for p in parts):
            return parts[-1]
    return None


def _span(stmts: Sequence[ast.stmt]) -> range:
    return range(stmts[0].lineno, (stmts[-1].end_lineno or stmts[-1].lineno) + 1)


def _leaves(stmts: Sequence[ast.stmt]) -> bool:
    return bool(stmts) and isinstance(stmts[-1], (ast.Return, ast.Raise))


def excluded_lines(source: str, guards: Sequence[FixedGuard]) -> Excluded:
    """The lines of ``source`` that ``guards`` rule out (see the module docstring)."""
    if not guards:
        return Excluded({})
    fixed = {normalize(g.expr): g for g in guards}
    tree = ast.parse(source)
    out: dict[int, FixedGuard] = {}

    def exclude(lines: Iterable[int], guard: FixedGuard) -> None:
        for line in lines:
            out.setdefault(line, guard)

    for node in ast.walk(tree):
        for name in ("body", "orelse", "finalbody"):
            block = getattr(node, name, None)
            if not isinstance(block, list):
                continue
            for i, stmt in enumerate(block):
                if not isinstance(stmt, ast.If):
                    continue
                decided = _truth(stmt.test, fixed)
                if decided is None:
                    continue
                dropped, kept = ((stmt.orelse, stmt.body) if decided.value
                                 else (stmt.body, stmt.orelse))
                if dropped:
                    exclude(_span(dropped), decided)
                if _leaves(kept) and block[i + 1:]:
                    exclude(_span(block[i + 1:]), decided)
    _exclude_unreached_functions(tree, out)
    return Excluded(out)


def _exclude_unreached_functions(tree: ast.Module, out: dict[int, FixedGuard]) -> None:
    """Private functions referenced only from excluded lines are excluded too (fixpoint)."""
    defs = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
            and n.name.startswith("_") and not n.name.startswith("__")]
    refs: dict[str, list[int]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            refs.setdefault(node.attr, []).append(node.lineno)
        elif isinstance(node, ast.Name):
            refs.setdefault(node.id, []).append(node.lineno)
    changed = True
    while changed:
        changed = False
        for fn in defs:
            where = refs.get(fn.name, [])
            if not where or fn.body[0].lineno in out:
                continue
            if all(line in out for line in where):
                exclude_from = out[where[0]]
                for line in _span(fn.body):
                    out.setdefault(line, exclude_from)
                changed = True


def guard_problem(lane: TargetSpec, session: object) -> str | None:
    """None when every fixed guard of ``lane`` has its declared value on ``session``."""
    for guard in lane.fixed_guards:
        try:
            value = eval(compile(normalize(guard.expr), "<fixed guard>", "eval"),  # noqa: S307
                         {"__builtins__": {}}, {"self": session})
        except Exception as exc:  # noqa: BLE001 - a guard the object cannot answer is false
            return (f"lane {lane.name!r} declares the guard {guard.expr!r} fixed, but it cannot "
                    f"be evaluated on a {type(session).__name__}: {exc!r}; correct "
                    f"TargetSpec.fixed_guards of {lane.name!r}")
        if bool(value) is not guard.value:
            return (f"lane {lane.name!r} declares {guard.expr!r} is {guard.value} "
                    f"({guard.why}), but a real instance says {bool(value)}; correct "
                    f"TargetSpec.fixed_guards of {lane.name!r}")
    return None


def lane_guards(lane: TargetSpec, services: Mapping[str, str], tmpdir: str | None) -> (
        str | None):
    """In a child: build ``lane`` once and evaluate its fixed guards; None when all hold."""

    async def probe(root: Path) -> str | None:
        handle = await lane.build(BuildContext(root, "arib-guards", dict(services)))
        try:
            return guard_problem(lane, handle.session)
        finally:
            await handle.dispose()

    with tempfile.TemporaryDirectory(prefix="arib-guards-", dir=tmpdir) as tmp:
        return anyio.run(functools.partial(probe, Path(tmp)), backend="asyncio")


def executed_excluded(excluded: Excluded, lane: TargetSpec,
                      coverage: Mapping[str, frozenset[int]]) -> str | None:
    """None unless a clean run executed a line a fixed guard rules out (the guard is false)."""
    for check_id, lines in sorted(coverage.items()):
        hit = sorted(line for line in lines if line in excluded.lines)
        if hit:
            guard = excluded.lines[hit[0]]
            return (f"lane {lane.name!r} declares {guard.expr!r} is {guard.value} "
                    f"({guard.why}), yet {check_id} executed line(s) {hit[:5]} it rules "
                    f"out; correct TargetSpec.fixed_guards of {lane.name!r}")
    return None
