"""ARIB-BRANCH-003: a branch exists from the moment it is created, also while it is empty.

``create_branch_from_turn`` documents that it creates a branch and returns its id;
``list_branches`` lists "all branches in this session"; ``switch_to_branch`` and
``delete_branch`` refuse only a branch that does not exist. A branch created from turn 1
(the agent starts the conversation over) holds no items until something is written on it.
Agent code that creates one, looks at another branch and comes back, or cleans it up, needs
the id it was given to keep working: listed (with 0 messages, current while it is), switched
to, deleted; and refused once deleted.

The check creates such a branch by name and one auto-named (both from turn 1), lists, switches
away and back, writes on one of them, and deletes both; ``main`` always holds turns here.
"""

from __future__ import annotations

from arib.checks.base import CheckSpec, Selector, TrialContext
from arib.checks.common import trials_param
from arib.checks.openai_agents._adv_model import MAIN, Catalogue, Model
from arib.checks.openai_agents._adv_probe import (
    BRANCH_API,
    FAILED,
    Recorder,
    check_items,
    check_listing,
    require,
)
from arib.checks.openai_agents._adv_world import TOOLS, write_turn
from arib.ground.model import Trial


async def run_trial(ctx: TrialContext) -> Trial:
    """One trial: two empty branches from turn 1 are listed, switched to, written on and deleted."""
    handle = await ctx.open()
    s = handle.session
    require(s, BRANCH_API)
    rec, rng, cat = Recorder(ctx), ctx.rng, Catalogue(f"{ctx.seed:016x}")
    m, cur = Model(), MAIN
    for n in range(1, 4):
        await write_turn(rec, s, "S", m, MAIN,
                         [cat.user(f"{cat.tag} q{n}"), *cat.responses(rng, TOOLS)], False)
    fresh: list[str] = []
    for name in ("fresh", None):
        await rec.call("S.switch_to_branch('main')", s.switch_to_branch, MAIN)
        got = await rec.call(f"S.create_branch_from_turn(1, {name!r})",
                             s.create_branch_from_turn, 1, name)
        if got is FAILED:
            return rec.trial()
        m.create(MAIN, 1, str(got))
        cur = str(got)
        fresh.append(cur)
        await check_items(rec, s, m, cur, "S", cur)
        await check_listing(rec, s, m, "S", cur)
    for branch in (MAIN, *fresh):
        if await rec.call(f"S.switch_to_branch({branch!r})", s.switch_to_branch,
                          branch) is not FAILED:
            cur = branch
        await check_items(rec, s, m, branch, "S", cur, explicit=False)
    entries = [cat.user(f"{cat.tag} over again"), *cat.responses(rng, TOOLS)]
    if await rec.call(f"S.add_items([a turn]) on {cur!r}", s.add_items,
                      [e.item for e in entries]) is not FAILED:
        m.append(cur, entries)
    await check_listing(rec, s, m, "S", cur)
    if await rec.call(f"S.delete_branch({fresh[0]!r})", s.delete_branch,
                      fresh[0]) is not FAILED:
        m.delete(fresh[0])
    if await rec.call(f"S.delete_branch({fresh[1]!r}, force=True)", s.delete_branch, fresh[1],
                      True) is not FAILED:
        m.delete(fresh[1])
        cur = MAIN
    await check_listing(rec, s, m, "S", cur)
    for name in fresh:
        await rec.refused(f"S.switch_to_branch({name!r}) after its delete", s.switch_to_branch,
                          name)
    await check_items(rec, s, m, MAIN, "S", cur)
    return rec.trial()


CHECK = CheckSpec(
    id="ARIB-BRANCH-003",
    invariant="every branch id create_branch_from_turn returned is listed by list_branches and "
    "can be switched to and deleted until it is deleted, also while the branch holds no items",
    fault="branches created from turn 1 (named and auto-named), empty until written: listed, "
    "switched away from and back to, written on, deleted (plain and forced)",
    params=(trials_param(2),),
    run_trial=run_trial,
    mutants=("reference_empty_branch_unknown",),
    generated=(Selector("reference", "ReferenceSession.add_items", "early_return"),),
    timeout_s=60.0,
)
