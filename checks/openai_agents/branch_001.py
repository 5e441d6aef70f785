"""ARIB-BRANCH-001: conversation branches are copies that never leak into each other.

What agent code relies on when it rewinds a conversation (AdvancedSQLiteSession's documented
branch API), judged against ``arib.checks.openai_agents._adv_model.Model`` on a store a peer session
already uses (``arib.checks.openai_agents._adv_world``; same branch name ``alt``, more turns, a
branch ``peer-only``):

1. the session writes, clears, and writes k turns on ``main`` (some turns in two add_items
   calls, with tool calls and outputs); every limit edge of get_items is read;
2. ``create_branch_from_turn(n, "alt")`` returns ``alt``, makes it current and holds exactly
   the turns before n, in order; misuse is refused with ValueError (a turn only the peer has,
   turn 0, a used name, ``main``, a blank name);
3. turns written on ``alt``; ``create_branch_from_content`` (auto-named) from one of them;
   ``switch_to_branch`` to ``main`` and to a new branch ``keep``; switching to an unknown or
   the peer's branch is refused and changes nothing;
4. a second instance of the session opens on ``main`` and switches to ``keep``;
5. pops on ``alt`` take its newest items, down into the copied turns, and leave ``main``
   whole (the copies share nothing observable);
6. list_branches, through both instances, reports every branch with its message and user
   turn counts and the instance's current branch;
7. delete_branch refuses ``main``, the current branch without force, unknown and the peer's
   branches; the other instance deletes ``alt`` (this one's current branch): it is gone
   alone, its id stays used, and this instance's forced delete of it is refused without
   moving the instance; force-deleting the current branch returns to ``main``;
8. clear_session, then a new turn: the other instance (still on ``keep``) now reads ``main``;
9. the peer is untouched, and a fresh instance reads the same branches.

No call may hang (``hang_invariant``): a call that never returns leaves the agent stuck and
shows none of the above. A call that fails on a lock another connection keeps holding ends
the trial's calls (each would wait out the busy timeout again).

Every branch judged is non-empty: whether an empty branch exists is ARIB-BRANCH-003's
question.
"""

from __future__ import annotations

from arib.checks.base import CheckSpec, Selector, TrialContext
from arib.checks.common import trials_param
from arib.checks.openai_agents._adv_model import MAIN, Catalogue, Model
from arib.checks.openai_agents._adv_probe import (
    BRANCH_API,
    FAILED,
    SDK_TYPES,
    Recorder,
    check_items,
    check_listing,
)
from arib.checks.openai_agents._adv_world import (
    PEER_ONLY,
    TOOLS,
    check_peer,
    fill_peer,
    open_peer_first,
    reopen,
    write_turn,
)
from arib.ground.model import Trial


async def run_trial(ctx: TrialContext) -> Trial:
    """One trial: two instances make, switch, pop, list and delete branches beside a peer.

    Long (over 80 lines) on purpose: the trial is one scenario read top to bottom, and its
    concurrent tasks are closures over the trial's state; split up, that state would be
    threaded through every helper.
    """
    peer = await open_peer_first(ctx, BRANCH_API)
    handle = await ctx.open()
    s = handle.session
    rec, rng, cat = Recorder(ctx), ctx.rng, Catalogue(f"{ctx.seed:016x}")
    m, cur = Model(), MAIN

    async def turn(branch: str, number: int) -> str:
        text = f"{cat.tag} S {branch} q{number} mark{cat.serial}"
        await write_turn(rec, s, "S", m, branch, [cat.user(text), *cat.responses(rng, TOOLS)],
                         split=rng.random() < 0.5)
        return text.split()[-1]

    async def create(turn_number: int, name: str | None, source: str) -> str:
        got = await rec.call(f"S.create_branch_from_turn({turn_number}, {name!r})",
                             s.create_branch_from_turn, turn_number, name)
        if name is not None:
            rec.equal("wrong_branch_id", "create_branch_from_turn's id", name, got)
        if got is not FAILED:
            m.create(source, turn_number, name or str(got))
        return name or str(got)

    async def switch(who: str, session: object, branch: str) -> None:
        await rec.call(f"{who}.switch_to_branch({branch!r})",
                       session.switch_to_branch, branch)  # type: ignore[attr-defined]

    # 1. a pop of nothing (it must leave nothing locked for the peer), a cleared history,
    # then k turns on main
    rec.equal("wrong_pop", "S.pop_item() on an empty session", None,
              await rec.call("S.pop_item()", s.pop_item))
    await fill_peer(rec, peer, cat, rng)
    await rec.call("S.add_items([junk])", s.add_items, [cat.user(f"{cat.tag} junk").item])
    await rec.call("S.clear_session()", s.clear_session)
    k = rng.randint(4, 6)
    for n in range(1, k + 1):
        await turn(MAIN, n)
    await check_items(rec, s, m, MAIN, "S", cur, limits=True)

    # 2. a branch from turn n1, and what must be refused
    n1 = rng.randint(2, k)
    cur = await create(n1, "alt", MAIN)
    await check_items(rec, s, m, "alt", "S", cur, limits=True)
    await check_items(rec, s, m, MAIN, "S", cur)
    # (turn n1 is gone on alt, though the peer's alt has it; names are tried on turn 1)
    for number, name in ((k + 1, None), (n1, None), (0, None), (1, "alt"), (1, MAIN),
                         (1, "  ")):
        await rec.refused(f"S.create_branch_from_turn({number}, {name!r})",
                          s.create_branch_from_turn, number, name)

    # 3. turns on alt, an auto-named branch from content, switches, a branch "keep"
    marks = [await turn("alt", m.last_turn("alt") + 1) for _ in range(2)]
    pick = rng.choice(marks)
    auto = await rec.call(f"S.create_branch_from_content({pick!r})",
                          s.create_branch_from_content, pick)
    if auto is not FAILED:
        if not isinstance(auto, str) or auto in m.used or not auto.strip():
            rec.fail("wrong_branch_id", f"create_branch_from_content returned {auto!r}, not a "
                     f"new branch id (used: {sorted(m.used)})")
        turn_of = next((t for t, c in m.user_turns("alt") if pick in str(c)), 0)
        m.create("alt", turn_of, str(auto))
        cur = str(auto)
    await check_items(rec, s, m, cur, "S", cur)
    await switch("S", s, MAIN)
    cur = MAIN
    for ghost in (f"ghost-{cat.tag}", PEER_ONLY):
        await rec.refused(f"S.switch_to_branch({ghost!r})", s.switch_to_branch, ghost)
    await check_items(rec, s, m, MAIN, "S", cur, explicit=False)
    cur = await create(rng.randint(2, k), "keep", MAIN)

    # 4. a second instance of the session
    s2 = await reopen(ctx, rec, handle, "S2")
    if s2 is FAILED:
        return rec.trial()
    cur2 = MAIN
    await check_items(rec, s2, m, MAIN, "S2", cur2, explicit=False)
    await switch("S2", s2, "keep")
    cur2 = "keep"
    await check_items(rec, s2, m, "keep", "S2", cur2)

    # 5. pops on alt reach into the copied turns; main keeps them
    await switch("S", s, "alt")
    cur = "alt"
    copied = sum(t < n1 for t in m.turns("alt"))
    for _ in range(len(m.items("alt")) - copied + 1):
        want = m.pop("alt")
        got = await rec.call("S.pop_item()", s.pop_item)
        rec.equal("wrong_pop", "S.pop_item() on 'alt'", want.item if want else None, got)
    for branch in (MAIN, "alt", "keep"):
        await check_items(rec, s, m, branch, "S", cur)

    # 6. the listing, through both instances
    await check_listing(rec, s, m, "S", cur)
    await check_listing(rec, s2, m, "S2", cur2)

    # 7. deletes: what is refused, a plain delete, a forced delete of the current branch
    for name, force in ((MAIN, False), ("alt", False), (f"ghost-{cat.tag}", False),
                        (PEER_ONLY, False), ("", False)):
        await rec.refused(f"S.delete_branch({name!r}, force={force})", s.delete_branch, name,
                          force)
    # S2 deletes S's current branch: S's forced delete of it is refused and moves S nowhere
    if await rec.call("S2.delete_branch('alt')", s2.delete_branch, "alt") is not FAILED:
        m.delete("alt")
    await rec.refused("S.delete_branch('alt', force=True) after S2 deleted it",
                      s.delete_branch, "alt", True)
    rec.items("S.get_items() on its deleted branch", [],
              await rec.call("S.get_items()", s.get_items))
    await switch("S", s, MAIN)
    cur = MAIN
    rec.items("S.get_items(branch_id='alt') after its delete", [],
              await rec.call("S.get_items(branch_id='alt')", s.get_items, branch_id="alt"))
    await rec.refused("S.create_branch_from_turn(1, 'alt') after its delete",
                      s.create_branch_from_turn, 1, "alt")
    await switch("S", s, str(auto))
    cur = str(auto)
    if await rec.call(f"S.delete_branch({auto!r}, force=True)", s.delete_branch, str(auto),
                      True) is not FAILED:
        m.delete(str(auto))
        cur = MAIN
    await check_items(rec, s, m, MAIN, "S", cur)
    await check_listing(rec, s, m, "S", cur)

    # 8. a clear by one instance moves the other back to main
    if await rec.call("S.clear_session()", s.clear_session) is not FAILED:
        m.clear()
        cur = cur2 = MAIN
    await turn(MAIN, 1)
    await check_items(rec, s2, m, MAIN, "S2", cur2, explicit=False)
    await check_listing(rec, s2, m, "S2", cur2)

    # 9. the peer, and a fresh instance
    await check_peer(rec, peer)
    s3 = await reopen(ctx, rec, handle, "S3")
    if s3 is not FAILED:
        await check_listing(rec, s3, m, "S3", MAIN)
        await check_items(rec, s3, m, MAIN, "S3", MAIN)
    return rec.trial()


CHECK = CheckSpec(
    id="ARIB-BRANCH-001",
    invariant="a branch created from turn N holds exactly the turns before N of its source, in "
    "order; writes, pops and deletes on one branch never change another branch or another "
    "session; each instance reads its current branch and all are back on main after a clear; "
    "list_branches reports every branch with its counts; documented misuse raises ValueError "
    "and changes nothing; no call hangs",
    fault="a store a peer session already uses (same branch names, more turns); branches "
    "created from turn and from content, written, popped into the copied turns, switched on "
    "two instances, deleted (plain, forced, and under the other instance), misused, then the "
    "session cleared; every limit edge read; a fresh instance reads the result",
    params=(trials_param(2),),
    run_trial=run_trial,
    mutants=(
        "reference_branch_copies_turn_n",
        "reference_delete_branch_takes_main_copies",
        "advanced_branch_copies_turn_n",
        "advanced_switch_skips_validation",
    ),
    generated=(
        Selector("reference", "ReferenceSession.add_items", "early_return"),
        Selector("advanced-sqlite-file", "AdvancedSQLiteSession.create_branch_from_turn",
                 "early_return"),
        Selector("advanced-sqlite-file", "AdvancedSQLiteSession.delete_branch*",
                 "widen_session_filter"),
        Selector("advanced-sqlite-file", "AdvancedSQLiteSession.switch_to_branch*",
                 "flip_comparison"),
    ),
    timeout_s=60.0,
    hang_invariant=True,
    preload=SDK_TYPES,
)
