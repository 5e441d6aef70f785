"""Mutation operators that model integrity defects of session backends.

Each operator is one small function ``(node) -> list of replacements``: it returns an empty
list when ``node`` is not one of its sites, and one replacement per mutant otherwise (most
sites give one; ``insert_conflict`` gives two). A replacement is a new node, or for a
statement ``cst.RemovalSentinel.REMOVE`` / a ``cst.FlattenSentinel`` of statements. The
generator (``arib.mutants.generate``) walks the backend class, asks every operator about every
node and splices each replacement into its own copy of the module source.

Every operator is registered once, in ``OPERATORS``, with the defect it models.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

import libcst as cst
import libcst.matchers as m

from arib.mutants.hangs import HANG_PRONE
from arib.mutants.hangs import hang_prone_first as hang_prone_first  # re-exported

T = TypeVar("T")

Replacement = cst.CSTNode | cst.RemovalSentinel | cst.FlattenSentinel[cst.BaseStatement]
Mutate = Callable[[cst.CSTNode], list[Replacement]]

_LOCKISH = re.compile(r"lock|guard|mutex|semaphore", re.IGNORECASE)
_CLOSED_CHECK = re.compile(r"(check|ensure|assert|raise_if|require)\w*(closed|open)", re.IGNORECASE)
_CLOSED_FLAG = re.compile(r"closed", re.IGNORECASE)
_RETRY_NAME = re.compile(r"retry", re.IGNORECASE)
_RETRY_HINT = re.compile(r"attempt|retr|tries|backoff|delay", re.IGNORECASE)
_SQL = re.compile(r"\b(SELECT|INSERT|UPDATE|DELETE|WHERE|ORDER\s+BY|CREATE|REPLACE|VALUES)\b")
_ORDER = re.compile(r"\b(ASC|DESC)\b")
_SESSION_FILTER = re.compile(r"\b(WHERE|AND)(\s+)((?:\w+\.)?session_id\s*=\s*\?)")
_PLAIN_INSERT = re.compile(r"\bINSERT(\s+)INTO\b")
_IF_NOT_EXISTS = re.compile(r"\b(CREATE\s+(?:UNIQUE\s+)?(?:TABLE|INDEX))\s+IF\s+NOT\s+EXISTS\b")

_FLIPS: dict[type[cst.BaseCompOp], type[cst.BaseCompOp]] = {
    cst.LessThan: cst.GreaterThanEqual,
    cst.GreaterThanEqual: cst.LessThan,
    cst.GreaterThan: cst.LessThanEqual,
    cst.LessThanEqual: cst.GreaterThan,
    cst.Equal: cst.NotEqual,
    cst.NotEqual: cst.Equal,
    cst.Is: cst.IsNot,
    cst.IsNot: cst.Is,
    cst.In: cst.NotIn,
    cst.NotIn: cst.In,
}


# --- small helpers -------------------------------------------------------------------------


def _strip_await(expr: cst.BaseExpression) -> cst.BaseExpression:
    while isinstance(expr, cst.Await):
        expr = expr.expression
    return expr


def _callee_name(expr: cst.BaseExpression) -> str | None:
    """``self._lock`` -> ``_lock``; ``self._guard()`` -> ``_guard``; ``lock`` -> ``lock``."""
    if isinstance(expr, cst.Call):
        expr = expr.func
    if isinstance(expr, cst.Attribute):
        return expr.attr.value
    if isinstance(expr, cst.Name):
        return expr.value
    return None


def _lone_expression(node: cst.CSTNode) -> cst.BaseExpression | None:
    """The expression of a line that holds exactly one expression statement."""
    if isinstance(node, cst.SimpleStatementLine) and len(node.body) == 1:
        small = node.body[0]
        if isinstance(small, cst.Expr):
            return small.value
    return None


def _calls_method(expr: cst.BaseExpression, names: frozenset[str]) -> bool:
    """``conn.commit()``, ``await conn.commit()`` or ``await wrap(conn.commit())``."""
    expr = _strip_await(expr)
    if not isinstance(expr, cst.Call):
        return False
    if isinstance(expr.func, cst.Attribute) and expr.func.attr.value in names and not expr.args:
        return True
    return len(expr.args) == 1 and _calls_method(expr.args[0].value, names)


def _ends_in_raise(body: cst.BaseSuite) -> bool:
    if isinstance(body, cst.SimpleStatementSuite):
        return isinstance(body.body[-1], cst.Raise)
    last = body.body[-1] if body.body else None
    return isinstance(last, cst.SimpleStatementLine) and isinstance(last.body[-1], cst.Raise)


def _only_exits(body: cst.BaseSuite) -> bool:
    """True when every statement of ``body`` is a ``raise`` or a ``return``."""
    lines = [body] if isinstance(body, cst.SimpleStatementSuite) else list(body.body)
    for line in lines:
        if not isinstance(line, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
            return False
        if not all(isinstance(s, (cst.Raise, cst.Return)) for s in line.body):
            return False
    return bool(lines)


def _with_parens(expr: cst.BaseExpression) -> cst.BaseExpression:
    atoms = (cst.Name, cst.Attribute, cst.Call, cst.Subscript, cst.List, cst.Tuple)
    if expr.lpar or isinstance(expr, atoms):
        return expr
    return expr.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])


_Listed = cst.Arg | cst.WithItem


def _drop_from(items: Sequence[_Listed], index: int) -> list[_Listed]:
    """Remove ``items[index]``; the new last item inherits the old last item's comma."""
    kept = [item for i, item in enumerate(items) if i != index]
    if index == len(items) - 1 and kept:
        kept[-1] = kept[-1].with_changes(comma=items[-1].comma)
    return kept


def _text_segments(node: cst.CSTNode) -> list[str] | None:
    if isinstance(node, cst.SimpleString):
        return [node.value]
    if isinstance(node, cst.FormattedString):
        return [p.value for p in node.parts if isinstance(p, cst.FormattedStringText)]
    return None


def _with_segment(node: cst.CSTNode, index: int, text: str) -> cst.CSTNode:
    if isinstance(node, cst.SimpleString):
        return node.with_changes(value=text)
    assert isinstance(node, cst.FormattedString)
    parts: list[cst.BaseFormattedStringContent] = []
    seen = -1
    for part in node.parts:
        if isinstance(part, cst.FormattedStringText):
            seen += 1
            if seen == index:
                part = part.with_changes(value=text)
        parts.append(part)
    return node.with_changes(parts=parts)


def _rewrite_sql(
    node: cst.CSTNode, pattern: re.Pattern[str], variants: Callable[[re.Match[str]], list[str]]
) -> list[Replacement]:
    """One replacement per match (and per variant) of ``pattern`` in a SQL string literal."""
    segments = _text_segments(node)
    if segments is None or not _SQL.search(" ".join(segments)):
        return []
    out: list[Replacement] = []
    for index, text in enumerate(segments):
        for match in pattern.finditer(text):
            for variant in variants(match):
                new_text = text[: match.start()] + variant + text[match.end() :]
                out.append(_with_segment(node, index, new_text))
    return out


def _is_session_condition(expr: cst.BaseExpression) -> bool:
    """``table.c.session_id == value`` (either side)."""
    if not isinstance(expr, cst.Comparison) or len(expr.comparisons) != 1:
        return False
    target = expr.comparisons[0]
    if not isinstance(target.operator, cst.Equal):
        return False
    sides = (expr.left, target.comparator)
    return any(isinstance(s, cst.Attribute) and s.attr.value == "session_id" for s in sides)


class _HandlerScan(cst.CSTVisitor):
    """Finds an ``except`` clause that can fall through (so the enclosing loop goes again)."""

    def __init__(self) -> None:
        self.retries = False

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        return False

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False

    def visit_For(self, node: cst.For) -> bool:  # an inner loop owns its own handlers
        return False

    def visit_While(self, node: cst.While) -> bool:
        return False

    def visit_ExceptHandler(self, node: cst.ExceptHandler) -> None:
        if not _ends_in_raise(node.body):
            self.retries = True

    def visit_ExceptStarHandler(self, node: cst.ExceptStarHandler) -> None:
        if not _ends_in_raise(node.body):
            self.retries = True


def _retries_on_exception(body: cst.BaseSuite) -> bool:
    scan = _HandlerScan()
    body.visit(scan)
    return scan.retries


# --- the operators -------------------------------------------------------------------------


def unwrap_lock_with(node: cst.CSTNode) -> list[Replacement]:
    """with lock: body -> body"""
    if not isinstance(node, cst.With):
        return []
    out: list[Replacement] = []
    for index, item in enumerate(node.items):
        name = _callee_name(item.item)
        if item.asname is not None or name is None or not _LOCKISH.search(name):
            continue
        if len(node.items) > 1:
            out.append(node.with_changes(items=_drop_from(node.items, index)))
            continue
        body: list[cst.BaseStatement] = []
        if isinstance(node.body, cst.IndentedBlock):
            body = list(node.body.body)
        elif isinstance(node.body, cst.SimpleStatementSuite):
            body = [cst.SimpleStatementLine(body=node.body.body)]
        first_lines = getattr(body[0], "leading_lines", ())
        body[0] = body[0].with_changes(leading_lines=[*node.leading_lines, *first_lines])
        out.append(cst.FlattenSentinel(body))
    return out


def drop_await(node: cst.CSTNode) -> list[Replacement]:
    """await f(x) -> f(x)"""
    if not isinstance(node, cst.Await):
        return []
    inner = node.expression
    return [inner.with_changes(lpar=[*node.lpar, *inner.lpar], rpar=[*inner.rpar, *node.rpar])]


def drop_commit_call(node: cst.CSTNode) -> list[Replacement]:
    """conn.commit() -> (statement removed)"""
    expr = _lone_expression(node)
    if expr is None or not _calls_method(expr, frozenset({"commit"})):
        return []
    return [cst.RemovalSentinel.REMOVE]


def drop_rollback_call(node: cst.CSTNode) -> list[Replacement]:
    """conn.rollback() -> (statement removed)"""
    expr = _lone_expression(node)
    if expr is None or not _calls_method(expr, frozenset({"rollback"})):
        return []
    return [cst.RemovalSentinel.REMOVE]


def drop_closed_guard(node: cst.CSTNode) -> list[Replacement]:
    """if self._closed: raise ... -> (removed); self._check_not_closed() -> (removed)"""
    if isinstance(node, cst.If) and node.orelse is None and _only_exits(node.body):
        names = m.findall(node.test, m.Name())
        if any(isinstance(n, cst.Name) and _CLOSED_FLAG.search(n.value) for n in names):
            return [cst.RemovalSentinel.REMOVE]
        return []
    expr = _lone_expression(node)
    if expr is None:
        return []
    call = _strip_await(expr)
    name = _callee_name(call)
    if isinstance(call, cst.Call) and not call.args and name and _CLOSED_CHECK.search(name):
        return [cst.RemovalSentinel.REMOVE]
    return []


def swap_sql_order(node: cst.CSTNode) -> list[Replacement]:
    """ORDER BY id ASC -> ORDER BY id DESC (and DESC -> ASC) in a SQL string"""
    return _rewrite_sql(node, _ORDER, lambda mt: ["DESC" if mt.group(1) == "ASC" else "ASC"])


def swap_order_method(node: cst.CSTNode) -> list[Replacement]:
    """table.c.id.asc() -> table.c.id.desc() (and back)"""
    if not isinstance(node, cst.Call) or node.args or not isinstance(node.func, cst.Attribute):
        return []
    attr = node.func.attr.value
    if attr not in ("asc", "desc"):
        return []
    flipped = cst.Name("desc" if attr == "asc" else "asc")
    return [node.with_changes(func=node.func.with_changes(attr=flipped))]


def widen_sql_session_filter(node: cst.CSTNode) -> list[Replacement]:
    """WHERE session_id = ? -> WHERE (1 = 1 OR session_id = ?)"""
    return _rewrite_sql(
        node, _SESSION_FILTER, lambda mt: [f"{mt.group(1)}{mt.group(2)}(1 = 1 OR {mt.group(3)})"]
    )


def drop_session_where(node: cst.CSTNode) -> list[Replacement]:
    """query.where(table.c.session_id == sid) -> query"""
    if not (isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)):
        return []
    if node.func.attr.value not in ("where", "filter"):
        return []
    out: list[Replacement] = []
    for index, arg in enumerate(node.args):
        if arg.keyword is not None or not _is_session_condition(arg.value):
            continue
        if len(node.args) > 1:
            out.append(node.with_changes(args=_drop_from(node.args, index)))
        else:
            receiver = node.func.value
            out.append(receiver.with_changes(
                lpar=[*node.lpar, *receiver.lpar], rpar=[*receiver.rpar, *node.rpar]
            ))
    return out


def insert_on_conflict(node: cst.CSTNode) -> list[Replacement]:
    """INSERT INTO t -> INSERT OR IGNORE INTO t | INSERT OR REPLACE INTO t"""
    return _rewrite_sql(
        node,
        _PLAIN_INSERT,
        lambda mt: [f"INSERT OR IGNORE{mt.group(1)}INTO", f"INSERT OR REPLACE{mt.group(1)}INTO"],
    )


def drop_if_not_exists(node: cst.CSTNode) -> list[Replacement]:
    """CREATE TABLE IF NOT EXISTS t -> CREATE TABLE t (and CREATE INDEX) in a SQL string"""
    return _rewrite_sql(node, _IF_NOT_EXISTS, lambda mt: [mt.group(1)])


def flip_comparison(node: cst.CSTNode) -> list[Replacement]:
    """a < b -> a >= b; a == b -> a != b; x is None -> x is not None (one per operator)"""
    if not isinstance(node, cst.Comparison):
        return []
    out: list[Replacement] = []
    for index, target in enumerate(node.comparisons):
        flipped_type = _FLIPS.get(type(target.operator))
        if flipped_type is None:
            continue
        op = target.operator
        flipped = flipped_type(  # type: ignore[call-arg]
            whitespace_before=op.whitespace_before,  # type: ignore[attr-defined]
            whitespace_after=op.whitespace_after,  # type: ignore[attr-defined]
        )
        targets = list(node.comparisons)
        targets[index] = target.with_changes(operator=flipped)
        out.append(node.with_changes(comparisons=targets))
    return out


def return_early(node: cst.CSTNode) -> list[Replacement]:
    """async def f(): body -> async def f(): return; body (after any docstring)"""
    if not isinstance(node, cst.FunctionDef) or node.asynchronous is None:
        return []
    if not isinstance(node.body, cst.IndentedBlock):
        return []
    body = list(node.body.body)
    at = 1 if body and _is_docstring(body[0]) else 0
    returns_value = (
        node.returns is not None
        and not m.matches(node.returns.annotation, m.Name("None"))
        and not m.findall(node.body, m.Yield())
    )
    value = cst.Name("None") if returns_value else None
    body.insert(at, cst.SimpleStatementLine(body=[cst.Return(value=value)]))
    return [node.with_changes(body=node.body.with_changes(body=body))]


def run_retry_loop_once(node: cst.CSTNode) -> list[Replacement]:
    """while ...: try/except-and-retry -> for _single_attempt in range(1): (one attempt)"""
    if isinstance(node, cst.While) and _retries_on_exception(node.body):
        test = node.test
        if m.matches(test, m.Name("True")):
            count: cst.BaseExpression = cst.Integer("1")
        else:
            count = cst.IfExp(test=test, body=cst.Integer("1"), orelse=cst.Integer("0"))
        loop = cst.For(
            target=cst.Name("_single_attempt"),
            iter=cst.Call(func=cst.Name("range"), args=[cst.Arg(count)]),
            body=node.body,
            orelse=node.orelse,
            leading_lines=node.leading_lines,
        )
        return [loop]
    if not isinstance(node, cst.For) or node.asynchronous is not None:
        return []
    hinted = [*m.findall(node.target, m.Name()), *m.findall(node.iter, m.Name())]
    if not any(isinstance(n, cst.Name) and _RETRY_HINT.search(n.value) for n in hinted):
        return []
    if not _retries_on_exception(node.body):
        return []
    first_only = cst.Subscript(
        value=cst.List([cst.StarredElement(_with_parens(node.iter))]),
        slice=[cst.SubscriptElement(cst.Slice(lower=None, upper=cst.Integer("1")))],
    )
    return [node.with_changes(iter=first_only)]


def call_once_without_retry(node: cst.CSTNode) -> list[Replacement]:
    """self._run_with_retry(op) -> op()"""
    if not isinstance(node, cst.Call) or len(node.args) != 1:
        return []
    name = _callee_name(node)
    arg = node.args[0]
    if name is None or not _RETRY_NAME.search(name) or arg.keyword is not None or arg.star:
        return []
    return [cst.Call(func=_with_parens(arg.value), lpar=node.lpar, rpar=node.rpar)]


def _is_docstring(stmt: cst.BaseStatement) -> bool:
    expr = _lone_expression(stmt)
    return isinstance(expr, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString))


# --- the table -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Operator:
    """A registered operator: its name, its rewrite function and the defect it models."""

    name: str
    mutate: Mutate
    defect: str
    # True when its mutants change only what a session does once close() has ended it: on a
    # lane whose verified claims say close() is absent or does not end the session, they
    # can never fire, and the survey reports them as not applicable there.
    requires_terminal_close: bool = False

    @property
    def may_hang(self) -> bool:
        """Whether its mutants tend to block until their time limit (``arib.mutants.hangs``)."""
        return self.name in HANG_PRONE

    @property
    def change(self) -> str:
        """The one-line before -> after of the rewrite (the function's docstring)."""
        return (self.mutate.__doc__ or self.name).strip().splitlines()[0]


OPERATORS: dict[str, Operator] = {
    op.name: op
    for op in (
        Operator("drop_lock", unwrap_lock_with,
                 "the body runs without the lock or guard its with-statement took, so "
                 "concurrent calls interleave"),
        Operator("drop_await", drop_await,
                 "an awaited call is left as an un-awaited coroutine, so its work silently "
                 "never runs (or runs unordered)"),
        Operator("drop_commit", drop_commit_call,
                 "a write is never committed, so what it stored is rolled back or left "
                 "pending while the call reports success"),
        Operator("drop_rollback", drop_rollback_call,
                 "a failed write is not rolled back, so a half-done transaction stays open "
                 "on the connection"),
        Operator("drop_closed_guard", drop_closed_guard,
                 "the closed-state guard is gone, so a closed session keeps accepting calls",
                 requires_terminal_close=True),
        Operator("swap_order", swap_sql_order,
                 "a SQL ORDER BY runs the wrong way, so reads and pops see the wrong end of "
                 "the history"),
        Operator("swap_order_method", swap_order_method,
                 "a SQLAlchemy ordering runs the wrong way, so reads and pops see the wrong "
                 "end of the history"),
        Operator("widen_session_filter", widen_sql_session_filter,
                 "a SQL session_id filter always matches, so the statement reads or changes "
                 "other sessions' rows"),
        Operator("drop_session_where", drop_session_where,
                 "a SQLAlchemy session_id filter is dropped, so the statement reads or "
                 "changes other sessions' rows"),
        Operator("insert_conflict", insert_on_conflict,
                 "an INSERT silently ignores or replaces a conflicting row instead of "
                 "failing or adding it"),
        Operator("drop_if_not_exists", drop_if_not_exists,
                 "a schema step loses its IF NOT EXISTS, so a second instance, or a restart, "
                 "on a store already set up fails"),
        Operator("flip_comparison", flip_comparison,
                 "a comparison is inverted, so a branch, limit or filter takes the wrong side"),
        Operator("early_return", return_early,
                 "the async method returns at once, reporting success without doing its work"),
        Operator("single_attempt_loop", run_retry_loop_once,
                 "a loop that retries after an exception runs once, so a transient failure "
                 "is given up on or skipped"),
        Operator("call_without_retry", call_once_without_retry,
                 "an operation wrapped in a retry helper is attempted once, so a transient "
                 "failure surfaces or loses the write"),
    )
}
