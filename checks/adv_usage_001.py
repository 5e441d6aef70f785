"""ARIB-USAGE-001: usage is reported for exactly the turns it was stored for, and adds up.

Agent code calls ``store_run_usage(result)`` after each run and reads cost back per turn, per
branch and per session. Judged against ``checks._adv_model.Model`` (run results built offline
with the SDK's own ``Usage`` and ``RunContextWrapper``), on a store a peer session already
uses with usage on the same branch names and turn numbers (``checks._adv_world``):

1. usage stored before any turn, and a run without usage, record nothing;
2. after a clear, k turns on ``main``, usage stored after most of them: every turn reports
   its own run's figures (token details too), nothing else; the session total is their sum;
3. a branch ``alt`` with usage on its own turns: per-branch totals, and the session total
   over both; tool usage counts each tool call once, in its turn;
4. pops: a partly popped turn keeps its usage; a turn popped empty stops reporting it, and a
   new turn that reuses its number does not inherit it;
5. deleting ``alt`` takes its usage; clearing the session takes all of it;
6. after the clear, another instance writes a turn and this one stores usage for it;
7. the peer's usage is untouched, and a fresh instance reports the same figures.
"""

from __future__ import annotations

from checks._adv_model import MAIN, Catalogue, Figures, Model
from checks._adv_probe import (
    BRANCH_API,
    FAILED,
    USAGE_API,
    Recorder,
    check_items,
    check_tools,
    check_usage,
    require,
    run_result,
)
from checks._adv_world import TOOLS, check_peer, peer_world, store_usage, write_turn
from checks.base import CheckSpec, Selector, TrialContext
from checks.common import trials_param
from harness.model import Trial


async def run_trial(ctx: TrialContext) -> Trial:
    handle = await ctx.open()
    s = handle.session
    require(s, (*BRANCH_API, *USAGE_API))
    rec, rng, cat = Recorder(ctx), ctx.rng, Catalogue(f"{ctx.seed:016x}")
    peer = await peer_world(ctx, rec, cat, rng)
    m, cur = Model(), MAIN

    async def turn(branch: str, usage: bool) -> None:
        text = f"{cat.tag} S {branch} q{m.last_turn(branch) + 1}"
        await write_turn(rec, s, "S", m, branch, [cat.user(text), *cat.responses(rng, TOOLS)],
                         split=rng.random() < 0.5)
        if usage:
            await store_usage(rec, s, "S", m, branch, Figures.draw(rng))

    # 1. nothing to record yet; a run without usage
    await store_usage(rec, s, "S", m, MAIN, Figures.draw(rng))
    await rec.call("S.add_items([junk])", s.add_items, [cat.user(f"{cat.tag} junk").item])
    await rec.call("S.clear_session()", s.clear_session)
    rec.equal("wrong_total", "S.get_session_usage() before any usage", None,
              await rec.call("S.get_session_usage()", s.get_session_usage))

    # 2. turns on main with usage
    k = 5
    skip = rng.randint(1, k)
    for n in range(1, k + 1):
        await turn(MAIN, usage=n != skip)
    await rec.call("S.store_run_usage(a run without usage)", s.store_run_usage, run_result(None))
    await check_usage(rec, s, m, MAIN, "S", branches=(MAIN,))
    await check_tools(rec, s, m, MAIN, "S")

    # 3. a branch with its own usage
    n = rng.randint(3, k)
    if await rec.call(f"S.create_branch_from_turn({n}, 'alt')", s.create_branch_from_turn, n,
                      "alt") is not FAILED:
        m.create(MAIN, n, "alt")
        cur = "alt"
    for _ in range(2):
        await turn(cur, usage=True)
    await check_usage(rec, s, m, cur, "S", branches=(MAIN, "alt"))
    await check_tools(rec, s, m, cur, "S")

    # 4. pops: part of a turn, then all of it, then a new turn with its number
    last = m.last_turn(cur)
    while sum(t == last for t in m.turns(cur)) > 1:
        rec.equal("wrong_pop", f"S.pop_item() on {cur!r}", m.pop(cur).item,  # type: ignore[union-attr]
                  await rec.call("S.pop_item()", s.pop_item))
    await check_usage(rec, s, m, cur, "S")
    rec.equal("wrong_pop", f"S.pop_item() on {cur!r}", m.pop(cur).item,  # type: ignore[union-attr]
              await rec.call("S.pop_item()", s.pop_item))
    await check_usage(rec, s, m, cur, "S", branches=("alt",))
    await turn(cur, usage=False)
    await check_usage(rec, s, m, cur, "S")
    await store_usage(rec, s, "S", m, cur, Figures.draw(rng))
    await check_usage(rec, s, m, cur, "S", branches=("alt",))

    # 5. delete the branch, then clear
    await rec.call("S.switch_to_branch('main')", s.switch_to_branch, MAIN)
    cur = MAIN
    if await rec.call("S.delete_branch('alt')", s.delete_branch, "alt") is not FAILED:
        m.delete("alt")
    await check_usage(rec, s, m, MAIN, "S", branches=(MAIN, "alt"))
    s2 = (await ctx.reopen(handle)).session
    if await rec.call("S.clear_session()", s.clear_session) is not FAILED:
        m.clear()
    await check_usage(rec, s, m, MAIN, "S", branches=(MAIN,))

    # 6. another instance writes a turn; this one stores its usage
    await write_turn(rec, s2, "S2", m, MAIN, [cat.user(f"{cat.tag} S2 after clear"),
                                              *cat.responses(rng, TOOLS)], split=False)
    await store_usage(rec, s, "S", m, MAIN, Figures.draw(rng))
    await check_usage(rec, s2, m, MAIN, "S2", branches=(MAIN,))

    # 7. the peer, and a fresh instance
    await check_peer(rec, peer)
    s3 = (await ctx.reopen(handle)).session
    await check_items(rec, s3, m, MAIN, "S3", MAIN, explicit=False)
    await check_usage(rec, s3, m, MAIN, "S3")
    return rec.trial()


CHECK = CheckSpec(
    id="ARIB-USAGE-001",
    invariant="usage stored after a turn is reported for exactly that turn and branch, the "
    "session and branch totals are the exact sums of what is reported, a turn emptied by "
    "pops, a deleted branch or a clear stops reporting usage, another session's usage is "
    "never counted, and each tool call counts once in its turn",
    fault="a store a peer session already uses with usage on the same branch names and "
    "turns; usage stored before any turn, for most turns of main and of a branch, for a turn "
    "popped empty and rewritten, through a second instance after a clear; the branch deleted "
    "and the session cleared; a fresh instance reads the figures",
    params=(trials_param(2),),
    run_trial=run_trial,
    mutants=(
        "reference_session_usage_current_branch_only",
        "advanced_delete_branch_leaves_usage",
    ),
    generated=(
        Selector("reference", "ReferenceSession.add_items", "early_return"),
        Selector("advanced-sqlite-file", "AdvancedSQLiteSession.store_run_usage*",
                 "early_return"),
        Selector("advanced-sqlite-file", "AdvancedSQLiteSession.get_session_usage*",
                 "widen_session_filter"),
        Selector("advanced-sqlite-file", "AdvancedSQLiteSession.pop_item.<locals>._pop_item_sync",
                 "widen_session_filter"),
    ),
    timeout_s=60.0,
)
