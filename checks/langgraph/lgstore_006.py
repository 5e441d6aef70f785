"""ARIB-LGSTORE-006 (issue 35): semantic search ranks what was indexed, and only that. With an
``index`` config (``dims``, ``embed``, ``fields``) a search with a ``query`` gives the item
whose indexed text is the query first, with the top score; scored items come best first and
before any unscored one; what ``put(index=False)`` or a field outside ``index`` holds is never
what ranks an item; a path with several texts (``tags[*]``) indexes each; an overwrite
re-indexes and a delete drops the item's vectors; pages of a ranked search add up to the whole
ranking; a filter still applies; an index without ``fields`` embeds each whole document.

The embedder is our own and deterministic (``letters``: the letter counts of a text,
normalized), so cosine similarity is the share of letters two texts have in common: texts of
eight distinct letters sharing 8, 7, 6, 5 or 3 with the query rank strictly in that order. A
lane whose builder takes no ``index`` option abstains, naming it (``targets.langgraph.stores``
says why the SQLite and PostgreSQL stores cannot be given one here).
"""

from __future__ import annotations

import math
from typing import Any

from checks.base import CheckSpec, Selector, TrialContext
from checks.common import trials_param
from checks.langgraph._contract import Problems, guarded
from checks.langgraph._saver import store_call, store_of
from checks.langgraph._store import needs_keywords
from harness.ground.model import Trial

CHECK_ID = "ARIB-LGSTORE-006"
DIMS = 26
QUERY = "abcdefgh"
# key -> (indexed text, share of QUERY's letters): strictly decreasing similarity
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


def scores(found: Any) -> list[tuple[str, float | None]]:
    """(key, score) of each item a search gave, in order."""
    return [(item.key, getattr(item, "score", None)) for item in found or ()]


async def run_trial(ctx: TrialContext) -> Trial:
    """One trial: a ranked namespace, a mixed one, then overwrite, delete, pages, filter."""
    problems = Problems()
    return await guarded(ctx, lambda: _trial(ctx, problems))


async def _trial(ctx: TrialContext, problems: Problems) -> Trial:
    probe = store_of(await ctx.open())
    needs_keywords(probe, "put", "index")
    needs_keywords(probe, "search", "query")
    handle = await ctx.open_configured(index={"dims": DIMS, "embed": letters,
                                              "fields": ["text"]})
    store = store_of(handle)
    ranked_ns, mixed_ns = ("sem", f"{ctx.seed:x}", "ranked"), ("sem", f"{ctx.seed:x}", "mixed")
    order = list(RANKED)
    ctx.rng.shuffle(order)
    ctx.log(f"put {order} in {ranked_ns} (text indexed by the config's fields; kind by parity)")
    for n, key in enumerate(order):
        await store_call(store, "put", ranked_ns, key, {"text": RANKED[key], "kind": n % 2})
    await _ranking(store, ranked_ns, list(RANKED), problems, "the ranked namespace")
    await _pages(ctx, store, ranked_ns, problems)
    for kind in (0, 1):
        want = [key for key in RANKED if order.index(key) % 2 == kind]
        found = await store_call(store, "search", ranked_ns, query=QUERY, filter={"kind": kind},
                                 limit=100)
        problems.expect(f"search {QUERY!r} with filter kind={kind}: keys in order", want,
                        [key for key, _ in scores(found)])

    ctx.log(f"in {mixed_ns}: 'hidden' holds the query's text with index=False; 'other' holds it "
            f"outside its indexed field; 'tags' holds it as the second of two tags (tags[*])")
    await store_call(store, "put", mixed_ns, "hidden", {"text": QUERY}, index=False)
    await store_call(store, "put", mixed_ns, "other", {"text": "wxyz", "note": QUERY},
                     index=["text"])
    await store_call(store, "put", mixed_ns, "tags", {"text": "qrst", "tags": ["uvw", QUERY]},
                     index=["tags[*]"])
    found = scores(await store_call(store, "search", mixed_ns, query=QUERY, limit=100))
    ctx.log(f"search {QUERY!r} in {mixed_ns}: {found}")
    if not found or found[0][0] != "tags" or not _top(found[0][1]):
        problems.add("wrong", f"{mixed_ns}: the query is the second tag of 'tags', which must "
                              f"come first with score 1: {found}")
    for key, score in found:
        if key == "hidden" and score is not None:
            problems.add("wrong", f"'hidden' (put with index=False) has a score: {score}")
        if key == "other" and (score is None or score > 0.5):
            problems.add("wrong", f"'other' is ranked by a field outside its index: {score}")
    if "other" not in {key for key, _ in found}:
        problems.add("lost", f"'other' (indexed) is missing from {found}")

    ctx.log(f"overwrite r8 with text 'mnopqrst'; delete r7; search {QUERY!r} again")
    await store_call(store, "put", ranked_ns, "r8", {"text": "mnopqrst", "kind": 9})
    await store_call(store, "delete", ranked_ns, "r7")
    await _ranking(store, ranked_ns, ["r6", "r5", "r3", "r8"], problems,
                   "after the overwrite and the delete")
    found = scores(await store_call(store, "search", ranked_ns, query="mnopqrst", limit=1))
    if not found or found[0][0] != "r8" or not _top(found[0][1]):
        problems.add("wrong", f"search 'mnopqrst' (r8's new text) gives {found}")
    await _whole_documents(ctx, problems)
    return problems.trial(ctx, "ranked")


async def _whole_documents(ctx: TrialContext, problems: Problems) -> None:
    """Without ``fields`` an index embeds each whole document ("$"): a query that is a
    document's JSON ranks it first with score 1."""
    import json

    store = store_of(await ctx.open_configured(index={"dims": DIMS, "embed": letters}))
    ns = ("sem", f"{ctx.seed:x}", "whole")
    docs = {"doc": {"a": "abcdefgh"}, "near": {"a": "abcdxyzq"}}
    ctx.log(f"a store indexed without fields: put {docs} in {ns}; search the JSON of 'doc'")
    for key, value in docs.items():
        await store_call(store, "put", ns, key, value)
    query = json.dumps(docs["doc"], sort_keys=True, ensure_ascii=False)
    found = scores(await store_call(store, "search", ns, query=query, limit=10))
    if not found or found[0][0] != "doc" or not _top(found[0][1]):
        problems.add("wrong", f"indexed without fields, a search for the JSON of 'doc' gives "
                              f"{found}, not 'doc' first with score 1")


def _top(score: float | None) -> bool:
    return score is not None and abs(score - 1.0) < EPS


async def _ranking(store: Any, ns: tuple[str, ...], want: list[str], problems: Problems,
                   what: str) -> None:
    """A search for QUERY gives ``want`` in that order, scores strictly decreasing."""
    found = scores(await store_call(store, "search", ns, query=QUERY, limit=100))
    problems.expect(f"{what}: keys ranked for {QUERY!r}", want, [key for key, _ in found])
    values = [score for _, score in found]
    if any(v is None for v in values) or any(
            a <= b for a, b in zip(values, values[1:], strict=False)):  # type: ignore[operator]
        problems.add("wrong", f"{what}: scores not strictly decreasing: {found}")


async def _pages(ctx: TrialContext, store: Any, ns: tuple[str, ...], problems: Problems) -> None:
    """Pages of 2 at offsets 0, 2, 4 are the ranking cut in pieces."""
    whole = [key for key, _ in scores(await store_call(store, "search", ns, query=QUERY,
                                                       limit=100))]
    paged: list[str] = []
    for offset in range(0, len(RANKED) + 2, 2):
        page = scores(await store_call(store, "search", ns, query=QUERY, limit=2,
                                       offset=offset))
        paged.extend(key for key, _ in page)
    ctx.log(f"pages of 2 give {paged}")
    problems.expect(f"{ns}: pages of 2 of the ranking", whole, paged)


CHECK = CheckSpec(
    id=CHECK_ID,
    invariant="a search with a query ranks items by what was indexed, best first with scores "
    "falling, the exact match first with score 1; index=False and fields outside the index "
    "never rank an item; every text of tags[*] is indexed; an overwrite re-indexes, a delete "
    "un-indexes; pages cut the ranking; a filter applies",
    fault="none beyond the round trip: five texts of known similarity to the query in a "
    "seeded order of puts, an index=False twin of the query, the query outside the index and "
    "as a second tag, an overwrite and a delete",
    params=(trials_param(1),),
    run_trial=run_trial,
    mutants=("lg_store_reference_index_skips_list_paths", "lg_store_memory_scores_ascending"),
    generated=(Selector("lg-store-memory", "InMemoryStore._extract_texts", "flip_comparison"),
               Selector("lg-store-memory", "InMemoryStore._insertinmem_store",
                        "flip_comparison")),
    timeout_s=30.0,
    reference="lg-store-reference",
)
