"""ARIB-USAGE-001: usage is reported for exactly the turns it was stored for, and adds up.

Agent code calls ``store_run_usage(result)`` after each run and reads cost back per turn, per
branch and per session. Judged against ``arib.checks.openai_agents._adv_model.Model`` (run results
built offline with the SDK's own ``Usage`` and ``RunContextWrapper``), on a store a peer session
already uses with usage on the same branch names and turn numbers
(``arib.checks.openai_agents._adv_world``):

1. usage stored before any turn, and a run without usage, record nothing;
2. after a clear, k turns on ``main``, usage stored after most of them: every turn reports
   its own run's figures (token details too), nothing else; the session total is their sum;
3. a branch ``alt`` with usage on its own turns: per-branch totals, and the session total
   over both; tool usage counts each tool call once, in its turn;
4. pops: a partly popped turn keeps its usage; a turn popped empty stops reporting it, and a
   new turn that reuses its number does not inherit it;
5. deleting ``alt`` takes its usage; clearing the session takes all of it;
6. after the clear, another instance writes a turn and this one stores usage for it;
7. races: usage stored for a one-message turn while another instance pops that message,
   released together: whichever ran first, no usage is reported for a turn that is gone;
8. the peer's usage is untouched, and a fresh instance reports the same figures.
"""

from __future__ import annotations

import copy
from typing import Any

from arib.checks.base import CheckSpec, Param, Selector, TrialContext, race
from arib.checks.common import trials_param
from arib.checks.openai_agents._adv_model import MAIN, Catalogue, Figures, Model
from arib.checks.openai_agents._adv_probe import (
    BRANCH_API,
    FAILED,
    SDK_TYPES,
    USAGE_API,
    Recorder,
    check_items,
    check_tools,
    check_usage,
    run_result,
    usage_row,
    usage_rows,
)
from arib.checks.openai_agents._adv_world import (
    TOOLS,
    check_peer,
    fill_peer,
    open_peer_first,
    reopen,
    store_usage,
    write_turn,
)
from arib.ground.model import Trial


async def run_trial(ctx: TrialContext) -> Trial:
    """One trial: usage stored over turns, a branch, pops, a clear and races, judged each time.

    Long (over 80 lines) on purpose: the trial is one scenario read top to bottom, and its
    concurrent tasks are closures over the trial's state; split up, that state would be
    threaded through every helper.
    """
    peer = await open_peer_first(ctx, (*BRANCH_API, *USAGE_API))
    handle = await ctx.open()
    s = handle.session
    rec, rng, cat = Recorder(ctx), ctx.rng, Catalogue(f"{ctx.seed:016x}")
    await fill_peer(rec, peer, cat, rng)
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

    async def pop() -> None:
        want = m.pop(cur)
        rec.equal("wrong_pop", f"S.pop_item() on {cur!r}", want.item if want else None,
                  await rec.call("S.pop_item()", s.pop_item))

    while sum(t == last for t in m.turns(cur)) > 1:
        await pop()
    await check_usage(rec, s, m, cur, "S")
    await pop()
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
    s2 = await reopen(ctx, rec, handle, "S2")
    if s2 is FAILED:
        return rec.trial()
    if await rec.call("S.clear_session()", s.clear_session) is not FAILED:
        m.clear()
    await check_usage(rec, s2, m, MAIN, "S2", branches=(MAIN,))

    # 6. another instance writes a turn; this one (which has not used the store since its
    # clear) stores its usage
    await write_turn(rec, s2, "S2", m, MAIN, [cat.user(f"{cat.tag} S2 after clear"),
                                              *cat.responses(rng, TOOLS)], split=False)
    await store_usage(rec, s, "S", m, MAIN, Figures.draw(rng))
    await check_usage(rec, s2, m, MAIN, "S2", branches=(MAIN,))

    # 7. usage stored while another instance pops the turn it is for
    for _ in range(ctx.params["races"]):
        await race_store_and_pop(ctx, rec, s, s2, m, cat)

    # 8. the peer, and a fresh instance
    await check_peer(rec, peer)
    s3 = await reopen(ctx, rec, handle, "S3")
    if s3 is not FAILED:
        await check_items(rec, s3, m, MAIN, "S3", MAIN, explicit=False)
        await check_usage(rec, s3, m, MAIN, "S3")
    return rec.trial()


async def race_store_and_pop(ctx: TrialContext, rec: Recorder, s: Any, s2: Any, m: Model,
                             cat: Catalogue) -> None:
    """S stores usage for a one-message turn while S2 pops that message, released together.

    Either the store took the turn before the pop (then the turn is gone, and so is its
    usage) or after it (then the usage belongs to the turn before): usage reported for the
    popped turn is usage for a turn that no longer exists.
    """
    solo = cat.user(f"{cat.tag} solo {cat.serial}")
    if await rec.call("S.add_items([user])", s.add_items, [solo.item]) is FAILED:
        return
    m.append(MAIN, [solo])
    figures = Figures.draw(ctx.rng)
    before, after = copy.deepcopy(m), copy.deepcopy(m)
    before.store(MAIN, figures)
    before.pop(MAIN)
    after.pop(MAIN)
    after.store(MAIN, figures)
    ctx.log(f"S.store_run_usage(usage {figures.totals()}) and S2.pop_item() released together")
    popped: list[Any] = []

    async def pop() -> None:
        popped.append(await rec.call("S2.pop_item()", s2.pop_item))

    await race([lambda: rec.call("S.store_run_usage(...)", s.store_run_usage,
                                 run_result(figures)), pop])
    rec.equal("wrong_pop", "S2.pop_item() racing a store", solo.item, popped[0])
    seen = await rec.call("S.get_turn_usage()", s.get_turn_usage)
    outcomes = {"store first": before, "pop first": after}
    for name, model in outcomes.items():
        if usage_rows(seen) == [usage_row(t, f) for t, f in
                                 sorted(model.visible_usage(MAIN).items())]:
            ctx.log(f"usage as if the {name}")
            m.branches, m.usage, m.serial = model.branches, model.usage, model.serial
            return
    rec.fail("dangling_usage", f"after a store raced a pop of its turn, S.get_turn_usage() is "
             f"{usage_rows(seen)}; neither order of the two gives that")
    m.branches, m.usage, m.serial = after.branches, after.usage, after.serial


CHECK = CheckSpec(
    id="ARIB-USAGE-001",
    invariant="usage stored after a turn is reported for exactly that turn and branch, the "
    "session and branch totals are the exact sums of what is reported, a turn emptied by "
    "pops, a deleted branch or a clear stops reporting usage, another session's usage is "
    "never counted, even when a store races a pop of its turn, and each tool call counts once "
    "in its turn",
    fault="a store a peer session already uses with usage on the same branch names and "
    "turns; usage stored before any turn, for most turns of main and of a branch, for a turn "
    "popped empty and rewritten, through a second instance after a clear; the branch deleted "
    "and the session cleared; a fresh instance reads the figures",
    params=(
        Param("races", 6, 0, 100, "stores released together with a pop of their turn"),
        trials_param(2),
    ),
    run_trial=run_trial,
    mutants=(
        "reference_session_usage_current_branch_only",
        "advanced_delete_branch_leaves_usage",
    ),
    generated=(
        Selector("reference", "ReferenceSession.add_items", "early_return"),
        Selector("advanced-sqlite-file", "AdvancedSQLiteSession.store_run_usage",
                 "early_return"),
        Selector("advanced-sqlite-file", "AdvancedSQLiteSession.get_session_usage*",
                 "widen_session_filter"),
        Selector("advanced-sqlite-file", "AdvancedSQLiteSession.pop_item.<locals>._pop_item_sync",
                 "widen_session_filter"),
    ),
    timeout_s=60.0,
    preload=SDK_TYPES,
)
