"""ARIB-LGSTORE-006 (issue 35): semantic search ranks what was indexed, and only that: the
contract every store with an ``index`` keeps. With an ``index`` config (``dims``, ``embed``,
``fields``) a search with a ``query`` gives the item whose indexed text is the query first, with
score 1; scored items come best first with scores falling; the paths a put names
(``index=[...]``) are what is embedded, each text of a path like ``tags[*]``, and what
``put(index=False)`` or a field outside them holds never ranks an item; an overwrite re-indexes
and a delete drops the item's vectors; the first page of a ranked search and the page after it
are the ranking's head; a filter still applies; an index without ``fields`` embeds each whole
document. (What a put without ``index=`` embeds under a config's ``fields``, and pages further
down the ranking, are ARIB-LGSTORE-010's.)

The embedder and texts are ``arib.checks.langgraph._semantic``'s. A lane whose builder takes no
``index`` option abstains, naming it (``arib.targets.langgraph.stores`` says why the PostgreSQL
stores cannot be given one here, and which driver gives the SQLite stores theirs).
"""

from __future__ import annotations

import json

from arib.checks.base import CheckSpec, Selector, TrialContext
from arib.checks.common import trials_param
from arib.checks.langgraph._contract import Problems, guarded
from arib.checks.langgraph._saver import store_call
from arib.checks.langgraph._semantic import (
    QUERY,
    RANKED,
    expect_ranking,
    indexed_store,
    pages,
    ranking,
    scores,
    top,
)
from arib.ground.model import Trial

CHECK_ID = "ARIB-LGSTORE-006"
PAGE = 2  # the first page and the next: offsets 0 and PAGE


async def run_trial(ctx: TrialContext) -> Trial:
    """One trial: a ranked namespace, a mixed one, then overwrite, delete, pages, filter, and a
    store indexed without fields."""
    problems = Problems()
    return await guarded(ctx, lambda: _trial(ctx, problems))


async def _trial(ctx: TrialContext, problems: Problems) -> Trial:
    store = await indexed_store(ctx, ["text"])
    ranked_ns, mixed_ns = ("sem", f"{ctx.seed:x}", "ranked"), ("sem", f"{ctx.seed:x}", "mixed")
    order = list(RANKED)
    ctx.rng.shuffle(order)
    ctx.log(f"put {order} in {ranked_ns} with index=['text'] (kind by parity)")
    for n, key in enumerate(order):
        await store_call(store, "put", ranked_ns, key, {"text": RANKED[key], "kind": n % 2},
                         index=["text"])
    found = await expect_ranking(store, ranked_ns, list(RANKED), problems, "the ranked namespace")
    if found and not top(found[0][1]):
        problems.add("wrong", f"the exact match comes first without score 1: {found[0]}")
    whole = [key for key, _ in found]
    head = await pages(store, ranked_ns, PAGE, range(0, 2 * PAGE, PAGE))
    ctx.log(f"pages of {PAGE} at offsets 0 and {PAGE} give {head}")
    problems.expect(f"{ranked_ns}: the first two pages of {PAGE}", whole[:2 * PAGE], head)
    for kind in (0, 1):
        want = [key for key in RANKED if order.index(key) % 2 == kind]
        got = scores(await store_call(store, "search", ranked_ns, query=QUERY,
                                      filter={"kind": kind}, limit=100))
        problems.expect(f"search {QUERY!r} with filter kind={kind}: keys in order", want,
                        [key for key, _ in got])

    ctx.log(f"in {mixed_ns}: 'hidden' holds the query's text with index=False; 'other' holds it "
            f"outside its indexed field; 'tags' holds it as the second of two tags (tags[*])")
    await store_call(store, "put", mixed_ns, "hidden", {"text": QUERY}, index=False)
    await store_call(store, "put", mixed_ns, "other", {"text": "wxyz", "note": QUERY},
                     index=["text"])
    await store_call(store, "put", mixed_ns, "tags", {"text": "qrst", "tags": ["uvw", QUERY]},
                     index=["tags[*]"])
    found = await ranking(store, mixed_ns)
    ctx.log(f"search {QUERY!r} in {mixed_ns}: {found}")
    if not found or found[0][0] != "tags" or not top(found[0][1]):
        problems.add("wrong", f"{mixed_ns}: the query is the second tag of 'tags', which must "
                              f"come first with score 1: {found}")
    for key, score in found:
        if key == "hidden" and score is not None:
            problems.add("wrong", f"'hidden' (put with index=False) has a score: {score}")
        if key == "other" and (score is None or score > 0.5):
            problems.add("wrong", f"'other' is ranked by a field outside its index: {score}")
    if "other" not in {key for key, _ in found}:
        problems.add("lost", f"'other' (indexed) is missing from {found}")

    ctx.log(f"overwrite r8 with text 'mnopqrst' (index=['text']); delete r7; search {QUERY!r} "
            f"again")
    await store_call(store, "put", ranked_ns, "r8", {"text": "mnopqrst", "kind": 9},
                     index=["text"])
    await store_call(store, "delete", ranked_ns, "r7")
    await expect_ranking(store, ranked_ns, ["r6", "r5", "r3", "r8"], problems,
                         "after the overwrite and the delete")
    found = await ranking(store, ranked_ns, "mnopqrst", limit=1)
    if not found or found[0][0] != "r8" or not top(found[0][1]):
        problems.add("wrong", f"search 'mnopqrst' (r8's new text) gives {found}")
    await _whole_documents(ctx, problems)
    return problems.trial(ctx, "ranked")


async def _whole_documents(ctx: TrialContext, problems: Problems) -> None:
    """Without ``fields`` an index embeds each whole document ("$"), also on a put that names
    no paths: a query that is a document's JSON ranks it first with score 1."""
    store = await indexed_store(ctx, None)
    ns = ("sem", f"{ctx.seed:x}", "whole")
    docs = {"doc": {"a": "abcdefgh"}, "near": {"a": "abcdxyzq"}}
    ctx.log(f"a store indexed without fields: put {docs} in {ns}; search the JSON of 'doc'")
    for key, value in docs.items():
        await store_call(store, "put", ns, key, value)
    query = json.dumps(docs["doc"], sort_keys=True, ensure_ascii=False)
    found = await ranking(store, ns, query, limit=10)
    if not found or found[0][0] != "doc" or not top(found[0][1]):
        problems.add("wrong", f"indexed without fields, a search for the JSON of 'doc' gives "
                              f"{found}, not 'doc' first with score 1")


CHECK = CheckSpec(
    id=CHECK_ID,
    invariant="a search with a query ranks items by what was indexed, best first with scores "
    "falling, the exact match first with score 1; the paths a put names are what is indexed "
    "(every text of tags[*]); index=False and fields outside them never rank an item; an "
    "overwrite re-indexes, a delete un-indexes; the first two pages are the ranking's head; a "
    "filter applies; an index without fields embeds the whole document",
    fault="none beyond the round trip: five texts of known similarity to the query put in a "
    "seeded order, an index=False twin of the query, the query outside the indexed path and "
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
