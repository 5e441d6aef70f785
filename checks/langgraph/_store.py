"""What the LangGraph store checks share: a plain model of what a store holds (the expected
answer of every read), the portable filters and namespace conditions, and judging what a store
returned against the model.

Only what every store the family measures documents and keeps is modelled: a filter is a
top-level key compared for equality (a string, a bool, a list) or with ``$eq``, ``$ne``,
``$gt``, ``$gte``, ``$lt``, ``$lte`` on values every item has (two-digit integers, whose text
order is their numeric order: PostgresStore compares ``$gt`` and its kin as text); nested keys
are not portable (InMemoryStore matches a nested dict, SqliteStore takes dotted keys,
PostgresStore neither), and the order of search results is each store's own, so results are
compared as sets and pages by what they add up to.
"""

from __future__ import annotations

import functools
import inspect
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio
import anyio.to_thread

from arib.targets.base import NotApplicable
from arib.targets.langgraph.lanes import api_of

Ns = tuple[str, ...]
_COMPARE = {"$eq": lambda a, b: a == b, "$ne": lambda a, b: a != b,
            "$gt": lambda a, b: a > b, "$gte": lambda a, b: a >= b,
            "$lt": lambda a, b: a < b, "$lte": lambda a, b: a <= b}


def canon(value: Any) -> str:
    """A value's canonical JSON (what a round trip through JSON must keep)."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def meets(value: Mapping[str, Any], filter_: Mapping[str, Any] | None) -> bool:
    """Whether an item's value passes a filter (see the module's note)."""
    for name, want in (filter_ or {}).items():
        have = value.get(name)
        if isinstance(want, dict):
            if not all(_COMPARE[op](have, operand) for op, operand in want.items()):
                return False
        elif have != want or type(have) is not type(want):
            return False
    return True


def fits(ns: Ns, match_type: str, path: Sequence[str]) -> bool:
    """Whether ``ns`` starts (prefix) or ends (suffix) with ``path``; "*" is any one label."""
    if len(path) > len(ns):
        return False
    part = ns[:len(path)] if match_type == "prefix" else ns[len(ns) - len(path):]
    return all(want in ("*", have) for want, have in zip(path, part, strict=True))


@dataclass
class Model:
    """What a store must hold after the ops it acknowledged: value per (namespace, key)."""

    items: dict[tuple[Ns, str], dict[str, Any]] = field(default_factory=dict)

    def put(self, ns: Ns, key: str, value: Mapping[str, Any] | None) -> None:
        """Record a put (None: a delete)."""
        if value is None:
            self.items.pop((ns, key), None)
        else:
            self.items[(ns, key)] = dict(value)

    def search(self, prefix: Ns, filter_: Mapping[str, Any] | None = None) -> set[tuple[Ns, str]]:
        """The (namespace, key) pairs a search of ``prefix`` with ``filter_`` must give."""
        return {(ns, key) for (ns, key), value in self.items.items()
                if ns[:len(prefix)] == prefix and meets(value, filter_)}

    def namespaces(self, conditions: Iterable[tuple[str, Sequence[str]]] = (),
                   max_depth: int | None = None) -> list[Ns]:
        """The namespaces ``list_namespaces`` must give (sorted; truncated to ``max_depth``)."""
        conds = list(conditions)
        found = {ns for ns, _ in self.items if all(fits(ns, t, p) for t, p in conds)}
        return sorted({ns[:max_depth] if max_depth is not None else ns for ns in found})


def seen_items(found: Any, what: str, problems: list[str]) -> dict[tuple[Ns, str], str]:
    """The (namespace, key) -> canonical value of a search result; a result that is not a
    list of items is a problem (and counts as nothing found)."""
    if not isinstance(found, list):
        problems.append(f"{what} returned {found!r:.120}, not a list of items")
        return {}
    seen: dict[tuple[Ns, str], str] = {}
    for item in found:
        try:
            where = (tuple(item.namespace), item.key)
            value = canon(item.value)
        except AttributeError:
            problems.append(f"{what} returned {item!r:.120}, not an item")
            continue
        if where in seen:
            problems.append(f"{what} gave {where} twice")
        seen[where] = value
    return seen


def judge_search(model: Model, prefix: Ns, filter_: Mapping[str, Any] | None, found: Any,
                 what: str, problems: list[str]) -> None:
    """A full search (limit above every item) gives exactly the model's items, with their
    values."""
    seen = seen_items(found, what, problems)
    want = model.search(prefix, filter_)
    for where in sorted(want - set(seen)):
        problems.append(f"{what}: {where} is missing")
    for where in sorted(set(seen) - want):
        problems.append(f"{what}: {where} should not be there")
    for where in sorted(want & set(seen)):
        if seen[where] != canon(model.items[where]):
            problems.append(f"{what}: {where} reads {seen[where]:.80}, not "
                            f"{canon(model.items[where]):.80}")


def needs_keywords(obj: Any, method: str, *names: str) -> None:
    """NotApplicable when ``obj.<method>`` (its class's, as the installed release defines
    it) takes none of ``names`` as a keyword: the release never offered that argument."""
    func = getattr(type(obj), method, None)
    if func is None:
        raise NotApplicable(f"{type(obj).__name__} has no {method}() in this release")
    params = inspect.signature(func).parameters
    missing = [n for n in names if n not in params]
    if missing:
        raise NotApplicable(f"{type(obj).__name__}.{method}() takes no "
                            f"{', '.join(map(repr, missing))} in this release: the contract "
                            f"was never offered")


async def store_method(store: Any, name: str, *args: Any, **kwargs: Any) -> Any:
    """``store.<name>(...)`` for a store method outside the BaseStore interface (``sweep_ttl``,
    ``start_ttl_sweeper``, ...): awaited where the class defines it async, else called in a
    worker thread (it may block on the store's lock or a join; a caller's timeout abandons
    the thread)."""
    method = getattr(store, name)
    if inspect.iscoroutinefunction(method):
        return await method(*args, **kwargs)
    return await anyio.to_thread.run_sync(functools.partial(method, *args, **kwargs),
                                          abandon_on_cancel=True)


def needs_methods(obj: Any, *names: str) -> None:
    """NotApplicable naming the first of ``names`` that ``obj`` (a class, or an instance of
    one) lacks."""
    cls = obj if isinstance(obj, type) else type(obj)
    for name in names:
        if not callable(getattr(obj, name, None)):
            raise NotApplicable(f"{cls.__name__} has no {name}() (installed release): "
                                f"the contract was never offered there")


class Hung(Exception):
    """A store call that gave no answer within its time (``timed_call``)."""


async def timed_call(store: Any, seconds: float, method: str, *args: Any, **kwargs: Any) -> Any:
    """``store_call(store, method, ...)`` that raises Hung after ``seconds`` without an answer
    (a sync lane's worker thread is abandoned), so that a hung store is evidence, not a trial
    past the check's own time limit."""
    try:
        with anyio.fail_after(seconds):
            if api_of(store) == "sync":
                return await anyio.to_thread.run_sync(
                    functools.partial(getattr(store, method), *args, **kwargs),
                    abandon_on_cancel=True)
            return await getattr(store, f"a{method}")(*args, **kwargs)
    except TimeoutError:
        raise Hung(f"{method} gave no answer in {seconds:g} s") from None
