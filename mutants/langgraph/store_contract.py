"""Hand-written mutants of the LangGraph stores for ARIB-LGSTORE-002 (every operation's round
trip). Our own code installed over a method or module function, never SDK code."""

from __future__ import annotations

import importlib
from typing import Any

from arib.mutants.base import handwritten, load_class
from arib.targets.langgraph.stores import (
    MEMORY_STORE_MODULE,
    REFERENCE_STORE_MODULE,
    SQLITE_STORE_MODULE,
)


@handwritten(target="lg-store-reference", module=REFERENCE_STORE_MODULE, qualname="_fits",
             defect="list_namespaces matches a suffix condition from the start of the "
                    "namespace, as if it were a prefix")
def lg_store_reference_suffix_as_prefix() -> None:
    module = importlib.import_module(REFERENCE_STORE_MODULE)

    def _fits(ns: tuple[str, ...], condition: Any) -> bool:
        path = tuple(condition.path)
        return len(path) <= len(ns) and all(
            want in ("*", have) for want, have in zip(path, ns[:len(path)], strict=True))

    module._fits = _fits  # type: ignore[attr-defined]


@handwritten(target="lg-store-reference", module=REFERENCE_STORE_MODULE,
             qualname="ReferenceStore._one",
             defect="search ignores offset: every page is the first page")
def lg_store_reference_search_ignores_offset() -> None:
    from langgraph.store.base import SearchOp

    cls = load_class(REFERENCE_STORE_MODULE, "ReferenceStore")
    original = cls._one

    def _one(self: Any, op: Any) -> Any:
        if isinstance(op, SearchOp):
            op = op._replace(offset=0)
        return original(self, op)

    cls._one = _one


@handwritten(target="lg-store-memory", module=MEMORY_STORE_MODULE,
             qualname="_apply_operator",
             defect="the $gte filter leaves out the items equal to its bound (it is $gt)")
def lg_store_memory_gte_is_gt() -> None:
    module = importlib.import_module(MEMORY_STORE_MODULE)
    original = module._apply_operator

    def _apply_operator(value: Any, operator: str, op_value: Any) -> bool:
        return original(value, "$gt" if operator == "$gte" else operator, op_value)

    module._apply_operator = _apply_operator  # type: ignore[attr-defined]


@handwritten(target="lg-store-sqlite-file", module=SQLITE_STORE_MODULE,
             qualname="SqliteStore._get_filter_condition",
             defect="the $ne filter is built as $eq: it keeps the items it should leave out")
def lg_store_sqlite_ne_is_eq() -> None:
    cls = load_class(SQLITE_STORE_MODULE, "SqliteStore")
    original = cls._get_filter_condition

    def _get_filter_condition(self: Any, key: str, op: str, value: Any) -> Any:
        return original(self, key, "$eq" if op == "$ne" else op, value)

    cls._get_filter_condition = _get_filter_condition


@handwritten(target="lg-store-memory", module=MEMORY_STORE_MODULE,
             qualname="InMemoryStore.batch",
             defect="a batch returns its results grouped by kind of op (gets, then searches, "
                    "listings, puts), not in the order of its ops")
def lg_store_memory_batch_results_by_kind() -> None:
    cls = load_class(MEMORY_STORE_MODULE, "InMemoryStore")
    original, aoriginal = cls.batch, cls.abatch

    def by_kind(ops: list[Any], results: list[Any]) -> list[Any]:
        order = sorted(range(len(ops)), key=lambda n: type(ops[n]).__name__)
        return [results[n] for n in order]

    def batch(self: Any, ops: Any) -> Any:
        ops = list(ops)
        return by_kind(ops, original(self, ops))

    async def abatch(self: Any, ops: Any) -> Any:
        ops = list(ops)
        return by_kind(ops, await aoriginal(self, ops))

    cls.batch = batch
    cls.abatch = abatch
