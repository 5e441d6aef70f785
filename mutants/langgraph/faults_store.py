"""Hand-written mutants of the LangGraph stores for ARIB-LGSTORE-001 (namespaces racing), and
the forced-broken mutant of our reference store (the gate of a store check: a check naming
``reference="lg-store-reference"``). Our own code installed over a method, never SDK code."""

from __future__ import annotations

import json
from typing import Any

from arib.mutants.base import handwritten, load_class
from arib.targets.langgraph.stores import (
    MEMORY_STORE_MODULE,
    REFERENCE_STORE_MODULE,
    SQLITE_STORE_MODULE,
)


def _string_prefix(prefix: tuple[str, ...]) -> str:
    """The namespace as one string, labels joined by "/" (what a string prefix match sees)."""
    return "/".join(prefix)


@handwritten(target="lg-store-reference", module=REFERENCE_STORE_MODULE,
             qualname="ReferenceStore", forced=True,
             defect="forced-broken: every operation raises; every store check must be violated")
def lg_store_reference_forced_broken() -> None:
    cls = load_class(REFERENCE_STORE_MODULE, "ReferenceStore")

    def broken(self: Any, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("forced-broken mutant")

    async def abroken(self: Any, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("forced-broken mutant")

    cls.batch = broken
    cls.abatch = abroken


@handwritten(target="lg-store-reference", module=REFERENCE_STORE_MODULE,
             qualname="ReferenceStore._one",
             defect="search matches the namespace's JSON text by string prefix: a search of "
                    "('a', 'w1') also gives the items of ('a', 'w10')")
def lg_store_reference_search_by_string_prefix() -> None:
    # imported here, in the child that installs it: releases before the store API (langgraph-
    # checkpoint 1.0) have no SearchItem, and this module is loaded with every mutant
    from langgraph.store.base import SearchItem, SearchOp

    cls = load_class(REFERENCE_STORE_MODULE, "ReferenceStore")
    original = cls._one

    def _one(self: Any, op: Any) -> Any:
        if not isinstance(op, SearchOp):
            return original(self, op)
        start = json.dumps(list(op.namespace_prefix))[:-2]  # without the closing '"]'
        rows = [row for row in self._rows("ORDER BY seq DESC", ()) if row[0].startswith(start)]
        return [self._item(row, SearchItem)
                for row in rows[op.offset:op.offset + op.limit]]

    cls._one = _one


@handwritten(target="lg-store-reference", module=REFERENCE_STORE_MODULE,
             qualname="ReferenceStore._put",
             defect="a delete (a put of None) does nothing: deleted items stay")
def lg_store_reference_delete_is_a_no_op() -> None:
    cls = load_class(REFERENCE_STORE_MODULE, "ReferenceStore")
    original = cls._put

    def _put(self: Any, op: Any) -> None:
        if op.value is not None:
            original(self, op)

    cls._put = _put


@handwritten(target="lg-store-memory", module=MEMORY_STORE_MODULE,
             qualname="InMemoryStore.search",
             defect="search matches namespaces by string prefix: it searches the parent "
                    "namespace and keeps every item whose '/'-joined namespace starts with "
                    "the prefix's")
def lg_store_memory_search_by_string_prefix() -> None:
    cls = load_class(MEMORY_STORE_MODULE, "InMemoryStore")
    original, aoriginal = cls.search, cls.asearch

    def keep(items: list[Any], prefix: tuple[str, ...]) -> list[Any]:
        return [i for i in items
                if _string_prefix(tuple(i.namespace)).startswith(_string_prefix(prefix))]

    def search(self: Any, prefix: tuple[str, ...], /, **kwargs: Any) -> Any:
        return keep(original(self, tuple(prefix)[:-1], **kwargs), tuple(prefix))

    async def asearch(self: Any, prefix: tuple[str, ...], /, **kwargs: Any) -> Any:
        return keep(await aoriginal(self, tuple(prefix)[:-1], **kwargs), tuple(prefix))

    cls.search = search
    cls.asearch = asearch


@handwritten(target="lg-store-sqlite-file", module=SQLITE_STORE_MODULE,
             qualname="SqliteStore.delete",
             defect="delete returns without deleting: deleted items stay")
def lg_store_sqlite_delete_is_a_no_op() -> None:
    cls = load_class(SQLITE_STORE_MODULE, "SqliteStore")

    def delete(self: Any, namespace: tuple[str, ...], key: str) -> None:
        return None

    cls.delete = delete
