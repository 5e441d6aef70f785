"""ARIB-LGSTORE-005 (issue 35): a read that refreshes TTLs gives the items it returns their whole
TTL again; a read that does not leaves their expiry alone. With ``refresh_on_read`` on (the
store's TTL config), ``get`` and ``search`` refresh by default and ``refresh_ttl=False`` opts
out; a refreshed item outlives its first expiry, an item read without refreshing is swept at
its first expiry.

Real time, the database's own clock (SQLite's CURRENT_TIMESTAMP has whole seconds): four items
with a TTL of 0.05 minutes (3 s), put at t=0; at t=2 s one is read by ``get`` (refreshing),
one by a ``search`` of its own namespace (refreshing), two by ``get`` and ``search`` with
``refresh_ttl=False``; at t=4.1 s ``sweep_ttl()`` must delete exactly the two not refreshed
(their first expiry, t=3 s, is past; the refreshed ones expire at t=5 s or, on SQLite's whole
seconds, no earlier than t=4 s plus a second). TTLs are given by ``PutOp.ttl`` (see
ARIB-LGSTORE-004); a store without TTL abstains, naming what it found on the object.
"""

from __future__ import annotations

import time

import anyio

from arib.checks.base import CheckSpec, Selector, TrialContext
from arib.checks.common import trials_param
from arib.checks.langgraph._contract import Problems, guarded
from arib.checks.langgraph._saver import store_call
from arib.checks.langgraph._store import store_method
from arib.checks.langgraph.lgstore_004 import put_ttl, ttl_store
from arib.ground.model import Trial

CHECK_ID = "ARIB-LGSTORE-005"
TTL = 0.05  # minutes: 3 s
READ_AT_S = 2.0
SWEEP_AT_S = 4.1


async def run_trial(ctx: TrialContext) -> Trial:
    """One trial: reads that refresh and reads that do not, then a sweep past the first
    expiry."""
    problems = Problems()
    return await guarded(ctx, lambda: _trial(ctx, problems))


async def _trial(ctx: TrialContext, problems: Problems) -> Trial:
    store = await ttl_store(ctx, {"refresh_on_read": True})
    base = ("ttl", f"{ctx.seed:x}")
    spaces = {name: (*base, name) for name in ("by-get", "by-search", "no-get", "no-search")}
    ctx.log(f"put one item with ttl {TTL} in each of {list(spaces.values())}")
    start = time.monotonic()
    for ns in spaces.values():
        await put_ttl(store, ns, "item", TTL)
    await anyio.sleep(max(0.0, start + READ_AT_S - time.monotonic()))
    ctx.log("at 2 s: get by-get (refreshing), search by-search (refreshing), get no-get and "
            "search no-search with refresh_ttl=False")
    reads = [await store_call(store, "get", spaces["by-get"], "item"),
             await store_call(store, "search", spaces["by-search"]),
             await store_call(store, "get", spaces["no-get"], "item", refresh_ttl=False),
             await store_call(store, "search", spaces["no-search"], refresh_ttl=False)]
    for name, got in zip(spaces, reads, strict=True):
        present = bool(got) if isinstance(got, list) else got is not None
        if not present:
            problems.add("lost", f"{name}: not readable at 2 s, before its TTL: {got!r:.80}")
    await anyio.sleep(max(0.0, start + SWEEP_AT_S - time.monotonic()))
    swept = await store_method(store, "sweep_ttl")
    ctx.log(f"at 4.1 s: sweep_ttl() gave {swept!r}")
    problems.expect("sweep_ttl()'s count (the two items read without refreshing)", 2, swept)
    for name, ns in spaces.items():
        got = await store_call(store, "get", ns, "item", refresh_ttl=False)
        if name.startswith("by") and got is None:
            problems.add("lost", f"{name}: refreshed at 2 s, swept at 4.1 s (as if the read "
                                 f"had not refreshed its TTL)")
        if name.startswith("no") and got is not None:
            problems.add("wrong", f"{name}: read with refresh_ttl=False at 2 s, still there at "
                                  f"4.1 s (its TTL was refreshed)")
    return problems.trial(ctx, "refreshed")


CHECK = CheckSpec(
    id=CHECK_ID,
    invariant="a get or search that refreshes TTLs gives the items it returns their whole TTL "
    "again; one with refresh_ttl=False leaves their expiry alone",
    fault="items with a 3 s TTL read at 2 s by get and search, refreshing and not; a sweep at "
    "4.1 s (real time, the database's clock)",
    params=(trials_param(1),),
    run_trial=run_trial,
    mutants=("lg_store_reference_search_never_refreshes", "lg_sqlite_store_get_never_refreshes"),
    generated=(Selector("lg-store-sqlite-file", "SqliteStore._batch_get_ops",
                        "flip_comparison"),),
    equivalent={
        mutant: "flips `len(row) > 4` / `len(row) > 5` where _batch_get_ops copies a row's "
        "expires_at and ttl_minutes into the dict it hands _row_to_item, which reads neither: "
        "the item got is the same either way"
        for mutant in ("m-b2d3a67245d5", "m-02e4cd835633")
    },
    timeout_s=30.0,
    reference="lg-store-reference",
)
