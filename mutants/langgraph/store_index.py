"""Hand-written mutants of the LangGraph stores for ARIB-LGSTORE-006 (semantic search). Our own
code installed over a method, never SDK code."""

from __future__ import annotations

from typing import Any

from mutants.base import handwritten, load_class
from targets.langgraph.stores import MEMORY_STORE_MODULE

REFERENCE_INDEX_MODULE = "targets.langgraph.reference_index"


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
