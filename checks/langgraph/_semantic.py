"""What the semantic-search checks (ARIB-LGSTORE-006, -010) share: a deterministic embedder of
our own, texts of known similarity to one query, and reading a ranked search.

The embedder (``letters``) gives the letter counts of a text, normalized, so cosine similarity
is the share of letters two texts have in common: texts of eight distinct letters sharing 8, 7,
6, 5 or 3 with ``QUERY`` rank strictly in that order (``RANKED``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from arib.checks.base import TrialContext
from arib.checks.langgraph._contract import Problems
from arib.checks.langgraph._saver import store_call, store_of
from arib.checks.langgraph._store import needs_keywords

DIMS = 26
QUERY = "abcdefgh"
# key -> indexed text: strictly decreasing share of QUERY's letters (8, 7, 6, 5, 3 of 8)
RANKED = {"r8": "abcdefgh", "r7": "abcdefgx", "r6": "abcdefxy", "r5": "abcdexyz",
          "r3": "abcwxyzq"}
EPS = 1e-6


def letters(texts: list[str]) -> list[list[float]]:
    """Our embedder: per text, the counts of a..z, normalized (zero for no letter)."""
    out = []
    for text in texts:
        counts = [0.0] * DIMS
        for ch in text.lower():
            if "a" <= ch <= "z":
                counts[ord(ch) - 97] += 1.0
        norm = math.sqrt(sum(c * c for c in counts)) or 1.0
        out.append([c / norm for c in counts])
    return out


def index_config(fields: Sequence[str] | None) -> dict[str, Any]:
    """The ``index`` option: our embedder, and ``fields`` unless None (the whole document)."""
    config: dict[str, Any] = {"dims": DIMS, "embed": letters}
    if fields is not None:
        config["fields"] = list(fields)
    return config


async def indexed_store(ctx: TrialContext, fields: Sequence[str] | None) -> Any:
    """A store of the lane built with ``index_config(fields)``; NotApplicable where the release
    offers no ``index`` on put or ``query`` on search, or the lane takes no index option."""
    probe = store_of(await ctx.open())
    needs_keywords(probe, "put", "index")
    needs_keywords(probe, "search", "query")
    return store_of(await ctx.open_configured(index=index_config(fields)))


def scores(found: Any) -> list[tuple[str, float | None]]:
    """(key, score) of each item a search gave, in order."""
    return [(item.key, getattr(item, "score", None)) for item in found or ()]


def top(score: float | None) -> bool:
    """Whether a score is the top one (1, an exact match)."""
    return score is not None and abs(score - 1.0) < EPS


async def ranking(store: Any, ns: tuple[str, ...], query: str = QUERY,
                  limit: int = 100) -> list[tuple[str, float | None]]:
    """(key, score) of a ranked search of ``ns`` for ``query``."""
    return scores(await store_call(store, "search", ns, query=query, limit=limit))


async def expect_ranking(store: Any, ns: tuple[str, ...], want: list[str], problems: Problems,
                         what: str) -> list[tuple[str, float | None]]:
    """A search for QUERY gives ``want`` in that order, the first with score 1 when it is
    QUERY's own text, scores strictly decreasing; what it gave."""
    found = await ranking(store, ns)
    problems.expect(f"{what}: keys ranked for {QUERY!r}", want, [key for key, _ in found])
    values = [score for _, score in found]
    if any(v is None for v in values) or any(
            a <= b for a, b in zip(values, values[1:], strict=False)):  # type: ignore[operator]
        problems.add("wrong", f"{what}: scores not strictly decreasing: {found}")
    return found


async def pages(store: Any, ns: tuple[str, ...], size: int, offsets: range) -> list[str]:
    """The keys of the pages of ``size`` at ``offsets`` of a ranked search for QUERY, in
    order."""
    paged: list[str] = []
    for offset in offsets:
        page = await store_call(store, "search", ns, query=QUERY, limit=size, offset=offset)
        paged.extend(key for key, _ in scores(page))
    return paged
