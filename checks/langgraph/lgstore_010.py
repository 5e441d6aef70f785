"""ARIB-LGSTORE-010 (issue 35): a ranked search reaches the whole ranking, and the config's
``fields`` decide what a put embeds. With an ``index`` config whose ``fields`` are
``["text"]``, a put that names no paths embeds the item's ``text`` only: a query that is an
item's text ranks it first with score 1, and a query that sits in another field of an item
never ranks it that way; and the pages of a ranked search at every offset, down past the last
item, add up to the ranking one search gives (an item with several vectors, ``tags[*]``,
counted once).

``IndexConfig.fields`` is the documented key ("Fields to extract text from for embedding
generation"); pages are what an application pages a semantic search with. ARIB-LGSTORE-006 is
the rest of the semantic-search contract. The embedder and texts are
``arib.checks.langgraph._semantic``'s.
"""

from __future__ import annotations

from arib.checks.base import CheckSpec, Selector, TrialContext
from arib.checks.common import trials_param
from arib.checks.langgraph._contract import Problems, guarded
from arib.checks.langgraph._saver import store_call
from arib.checks.langgraph._semantic import QUERY, RANKED, indexed_store, pages, ranking, top
from arib.ground.model import Trial

CHECK_ID = "ARIB-LGSTORE-010"
PAGE = 2
# an item indexed by three tags sharing 4, 3 and 2 of QUERY's letters: its best (4 of 8) ranks
# it between r5 and r3
TAGS = ["abcdqrsu", "abcqrsuv", "abqrsuvw"]


async def run_trial(ctx: TrialContext) -> Trial:
    """One trial: what a put without paths embeds; then every page of a ranking."""
    problems = Problems()
    return await guarded(ctx, lambda: _trial(ctx, problems))


async def _trial(ctx: TrialContext, problems: Problems) -> Trial:
    store = await indexed_store(ctx, ["text"])
    fields_ns = ("sem", f"{ctx.seed:x}", "fields")
    ctx.log(f"index fields=['text']; put (no index=) in {fields_ns}: 'exact' with text "
            f"{QUERY!r}, 'aside' with {QUERY!r} in its note and 'wxyzqrst' as text")
    await store_call(store, "put", fields_ns, "exact", {"text": QUERY, "note": "mnop"})
    await store_call(store, "put", fields_ns, "aside", {"text": "wxyzqrst", "note": QUERY})
    found = await ranking(store, fields_ns)
    ctx.log(f"search {QUERY!r}: {found}")
    if not found or found[0][0] != "exact" or not top(found[0][1]):
        problems.add("wrong", f"a put without index= under fields=['text'] embeds more than "
                              f"the text: {QUERY!r}, the text of 'exact', gives {found}, not "
                              f"'exact' first with score 1")
    for key, score in found:
        if key == "aside" and (score is None or score > 0.5):
            problems.add("wrong", f"'aside' is ranked by its note, outside fields=['text']: "
                                  f"{score}")

    ranked_ns = ("sem", f"{ctx.seed:x}", "paged")
    order = [*RANKED, "multi"]
    ctx.rng.shuffle(order)
    ctx.log(f"put {order} in {ranked_ns} ('multi' indexed by its tags {TAGS}); pages of {PAGE} "
            f"at every offset to the end")
    for key in order:
        if key == "multi":
            await store_call(store, "put", ranked_ns, key, {"text": "-", "tags": TAGS},
                             index=["tags[*]"])
        else:
            await store_call(store, "put", ranked_ns, key, {"text": RANKED[key]},
                             index=["text"])
    whole = [key for key, _ in await ranking(store, ranked_ns)]
    problems.expect(f"{ranked_ns}: the ranking", ["r8", "r7", "r6", "r5", "multi", "r3"], whole)
    paged = await pages(store, ranked_ns, PAGE, range(0, len(order) + PAGE, PAGE))
    ctx.log(f"the pages give {paged}")
    missing = [key for key in whole if key not in paged]
    if missing:
        problems.add("lost", f"{ranked_ns}: pages of {PAGE} give {paged}, without {missing} "
                             f"of the ranking {whole}")
    else:
        problems.expect(f"{ranked_ns}: pages of {PAGE} of the ranking", whole, paged)
    return problems.trial(ctx, "ranked")


CHECK = CheckSpec(
    id=CHECK_ID,
    invariant="a put without index= embeds what the config's fields name, so a query that is "
    "an item's indexed text ranks it first with score 1 and one in another field does not; "
    "the pages of a ranked search at every offset add up to the ranking",
    fault="none beyond the round trip: items whose text or another field is the query, put "
    "without paths under fields=['text']; six items of known similarity (one by three tags) "
    "paged two at a time past the end",
    params=(trials_param(1),),
    run_trial=run_trial,
    mutants=("lg_store_reference_pages_within_twice_the_limit",
             "lg_store_reference_index_ignores_fields"),
    generated=(Selector("lg-store-reference", "ReferenceStore._put", "flip_comparison"),),
    timeout_s=30.0,
    reference="lg-store-reference",
)
