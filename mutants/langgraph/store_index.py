"""Hand-written mutants of the LangGraph stores for ARIB-LGSTORE-006 and -010 (semantic
search). Our own code installed over a method, never SDK code."""

from __future__ import annotations

from typing import Any

from arib.mutants.base import handwritten, load_class
from arib.targets.langgraph.stores import MEMORY_STORE_MODULE, REFERENCE_STORE_MODULE

REFERENCE_INDEX_MODULE = "arib.targets.langgraph.reference_index"


@handwritten(target="lg-store-reference", module=REFERENCE_INDEX_MODULE,
             qualname="VectorIndex.replace",
             defect="a path that gives several texts (tags[*]) indexes only its first")
def lg_store_reference_index_skips_list_paths() -> None:
    cls = load_class(REFERENCE_INDEX_MODULE, "VectorIndex")
    original = cls.replace

    def replace(self: Any, ns: str, key: str, value: Any, index: Any) -> None:
        from langgraph.store.base import get_text_at_path, tokenize_path

        if isinstance(index, list) and value is not None:
            index = [path for path in index
                     if len(get_text_at_path(value, tokenize_path(path))) <= 1]
        original(self, ns, key, value, index)

    cls.replace = replace


@handwritten(target="lg-store-memory", module=MEMORY_STORE_MODULE,
             qualname="InMemoryStore._batch_search",
             defect="a ranked search lists the items worst first")
def lg_store_memory_scores_ascending() -> None:
    cls = load_class(MEMORY_STORE_MODULE, "InMemoryStore")
    original = cls._batch_search

    def _batch_search(self: Any, ops: Any, queries: Any, results: list[Any]) -> None:
        original(self, ops, queries, results)
        for i, (op, _) in ops.items():
            if op.query and isinstance(results[i], list):
                scored = [r for r in results[i] if r.score is not None]
                rest = [r for r in results[i] if r.score is None]
                results[i] = sorted(scored, key=lambda r: r.score) + rest

    cls._batch_search = _batch_search


@handwritten(target="lg-store-reference", module=REFERENCE_STORE_MODULE,
             qualname="ReferenceStore._one",
             defect="a ranked search pages within the best twice-the-limit items only: a page "
                    "further down is short or empty")
def lg_store_reference_pages_within_twice_the_limit() -> None:
    from langgraph.store.base import SearchOp

    cls = load_class(REFERENCE_STORE_MODULE, "ReferenceStore")
    original = cls._one

    def _one(self: Any, op: Any) -> Any:
        if not (isinstance(op, SearchOp) and op.query and self._index is not None):
            return original(self, op)
        best = original(self, op._replace(offset=0, limit=2 * op.limit))
        return best[op.offset:op.offset + op.limit]

    cls._one = _one


@handwritten(target="lg-store-reference", module=REFERENCE_INDEX_MODULE,
             qualname="VectorIndex.__init__",
             defect="the index ignores the config's fields: a put without paths embeds the "
                    "whole document")
def lg_store_reference_index_ignores_fields() -> None:
    cls = load_class(REFERENCE_INDEX_MODULE, "VectorIndex")
    original = cls.__init__

    def __init__(self: Any, conn: Any, config: Any) -> None:
        original(self, conn, config)
        self.fields = ["$"]

    cls.__init__ = __init__
