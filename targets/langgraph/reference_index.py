"""Semantic search for our reference store: the ``index`` config the real stores take
(``dims``, ``embed``, ``fields``), kept the plain way.

A put embeds the texts at its paths (``PutOp.index``: None for the config's ``fields``, a list
of paths, or False for none; a path that gives several texts, like ``tags[*]``, gives one
vector per text) and replaces every vector the item had; a delete drops them. A search with a
``query`` scores each item by the best cosine similarity of its vectors to the query's, lists
the scored items best first, then the items without vectors (score None), and pages that list.
Paths are read with LangGraph's own ``tokenize_path``/``get_text_at_path`` and the embedder is
made with its ``ensure_embeddings``, as the real stores do.
"""

from __future__ import annotations

import json
import math
import sqlite3
from collections.abc import Mapping, Sequence
from typing import Any

SCHEMA = """
CREATE TABLE IF NOT EXISTS ref_vectors (
    ns TEXT NOT NULL, key TEXT NOT NULL, path TEXT NOT NULL, vector TEXT NOT NULL,
    PRIMARY KEY (ns, key, path));
"""


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    """The cosine similarity of two vectors (0 when either is zero)."""
    norms = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return sum(x * y for x, y in zip(a, b, strict=False)) / norms if norms else 0.0


class VectorIndex:
    """The vectors of one reference store's items, in its SQLite connection."""

    def __init__(self, conn: sqlite3.Connection, config: Mapping[str, Any]) -> None:
        from langgraph.store.base import ensure_embeddings

        self.conn = conn
        self.config = dict(config)
        self.embeddings = ensure_embeddings(config.get("embed"))
        self.fields = list(config.get("fields") or ["$"])
        conn.executescript(SCHEMA)

    def replace(self, ns: str, key: str, value: Mapping[str, Any] | None,
                index: Any) -> None:
        """Drop the item's vectors, then embed ``value`` at the paths ``index`` names."""
        from langgraph.store.base import get_text_at_path, tokenize_path

        self.conn.execute("DELETE FROM ref_vectors WHERE ns = ? AND key = ?", (ns, key))
        if value is None or index is False:
            return
        paths = self.fields if index is None else list(index)
        named: list[tuple[str, str]] = []
        for path in paths:
            texts = get_text_at_path(value, "$" if path == "$" else tokenize_path(path))
            named.extend((path if len(texts) == 1 else f"{path}.{i}", text)
                         for i, text in enumerate(texts))
        if not named:
            return
        vectors = self.embeddings.embed_documents([text for _, text in named])
        self.conn.executemany("INSERT OR REPLACE INTO ref_vectors VALUES (?, ?, ?, ?)",
                              [(ns, key, path, json.dumps(vector))
                               for (path, _), vector in zip(named, vectors, strict=True)])

    def ranked(self, rows: list[tuple[Any, ...]], query: str
               ) -> list[tuple[tuple[Any, ...], float | None]]:
        """``rows`` (ns, key, ...) with their scores for ``query``: scored ones best first
        (ties in the order given), then those without vectors (score None)."""
        wanted = self.embeddings.embed_query(query)
        scored: list[tuple[tuple[Any, ...], float]] = []
        unscored: list[tuple[tuple[Any, ...], float | None]] = []
        for row in rows:
            vectors = [json.loads(v) for (v,) in self.conn.execute(
                "SELECT vector FROM ref_vectors WHERE ns = ? AND key = ?", (row[0], row[1]))]
            if vectors:
                scored.append((row, max(cosine(wanted, v) for v in vectors)))
            else:
                unscored.append((row, None))
        scored.sort(key=lambda pair: -pair[1])
        return [*scored, *unscored]
