"""ARIB-BRANCH-002: writes act on the branch that was current when they were called.

AdvancedSQLiteSession documents that add_items and pop_item snapshot the current branch when
they are called ("a concurrent switch_to_branch() cannot redirect this pop"), that
store_run_usage captures its turn so that "appends and pops started later on this session
instance cannot change which turn this call captures", and that delete_branch waits for
earlier queued appends ("or their captured branch target could recreate rows"). An agent that
switches branches while its writes are still in flight relies on exactly that.

Each round, on one instance whose current branch is X, a seeded run of writes is started one
after another (each runs until its first suspension, so each has been called; none is
awaited): whole turns, answers without a user message, pops, and store_run_usage, often as
"a one-message turn, its usage, a pop that empties it". While they are in flight the check
awaits a branch operation: a switch to another branch, a branch created from an existing turn
of X, or a switch followed by the deletion of X. Then more writes are started (they must act
on the new current branch), and the round waits for everything. Pops never outnumber the
round's own items, so each pop's item is known. The model applies every call in the order it
was called, on the branch current at its call; at the end every branch's items, every pop's
item, the listing and the usage of every branch must be exactly the model's. Every call must
return (``hang_invariant``): a write that never completes wedges every later one, which is
how a broken ordering of in-flight operations usually shows.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import anyio

from arib.checks.base import CheckSpec, Param, Selector, TrialContext
from arib.checks.common import label, trials_param
from arib.checks.openai_agents._adv_model import MAIN, Catalogue, Entry, Figures, Model
from arib.checks.openai_agents._adv_probe import (
    BRANCH_API,
    FAILED,
    SDK_TYPES,
    USAGE_API,
    Recorder,
    check_items,
    check_listing,
    check_usage,
    require,
    run_result,
)
from arib.checks.openai_agents._adv_world import TOOLS, reopen, write_turn
from arib.ground.model import Trial

Start = Callable[[str, Callable[[], Awaitable[Any]]], Awaitable[None]]
SIDE = "side"


async def queue_writes(ctx: TrialContext, rec: Recorder, s: Any, m: Model, branch: str,
                       cat: Catalogue, start: Start, count: int) -> None:
    """Start ``count`` seeded writes on ``branch`` (the current one), none awaited."""
    rng, budget = ctx.rng, 0

    async def add(entries: list[Entry]) -> None:
        nonlocal budget
        names = ", ".join(e.kind for e in entries)
        m.append(branch, entries)
        budget += len(entries)
        await start(f"S.add_items([{names}]) on {branch!r}",
                    lambda: s.add_items([e.item for e in entries]))

    async def pop() -> None:
        nonlocal budget
        want = m.pop(branch)
        budget -= 1

        async def run() -> None:
            got = await s.pop_item()
            rec.equal("wrong_pop", f"S.pop_item() called on {branch!r}",
                      want.item if want else None, got)

        shown = label(want.item) if want else None
        await start(f"S.pop_item() on {branch!r} (must return {shown})", run)

    async def store() -> None:
        figures = Figures.draw(rng)
        m.store(branch, figures)
        await start(f"S.store_run_usage(usage {figures.totals()}) on {branch!r}",
                    lambda: s.store_run_usage(run_result(figures)))

    for _ in range(count):
        pick = rng.randrange(5)
        if pick == 0:
            await add([cat.user(f"{cat.tag} {branch} solo {cat.serial}")])
            await store()
            await pop()
        elif pick == 1 and budget > 0:
            await pop()
        elif pick == 2:
            await add([cat.user(f"{cat.tag} {branch} turn {cat.serial}"),
                       *cat.responses(rng, TOOLS)])
            await store()
        else:
            await add(cat.responses(rng, TOOLS)[-rng.randint(1, 2):])


async def run_trial(ctx: TrialContext) -> Trial:
    """One trial: rounds of writes in flight while the branch is switched, made or deleted."""
    handle = await ctx.open()
    s = handle.session
    require(s, (*BRANCH_API, *USAGE_API))
    rec, rng, cat = Recorder(ctx), ctx.rng, Catalogue(f"{ctx.seed:016x}")
    m, cur = Model(), MAIN
    for n in range(1, 4):
        await write_turn(rec, s, "S", m, MAIN,
                         [cat.user(f"{cat.tag} base q{n}"), *cat.responses(rng, TOOLS)], False)
    for name in ("a", "b"):
        await rec.call("S.switch_to_branch('main')", s.switch_to_branch, MAIN)
        if await rec.call(f"S.create_branch_from_turn(2, {name!r})", s.create_branch_from_turn,
                          2, name) is not FAILED:
            m.create(MAIN, 2, name)
            cur = name
    # A second long-lived instance works on a branch of its own ("side"): its large appends
    # hold the store while this instance's writes pile up behind them.
    s2 = await reopen(ctx, rec, handle, "S2")
    if s2 is FAILED:
        return rec.trial()
    if await rec.call("S2.create_branch_from_turn(2, 'side')", s2.create_branch_from_turn, 2,
                      "side") is not FAILED:
        m.create(MAIN, 2, SIDE)
    if len(m.branches) < 4:
        return rec.trial()  # the branches to race on could not be made: already evidence
    for r in range(ctx.params["rounds"]):
        async with anyio.create_task_group() as tg:
            async def start(text: str, call: Callable[[], Awaitable[Any]]) -> None:
                async def run() -> None:
                    await rec.call(text, call)

                ctx.log(f"start {text}")
                tg.start_soon(run)
                await anyio.sleep(0)  # it runs until its first suspension: it has been called

            source = cur
            if ctx.params["batch"]:
                bulk = [cat.assistant(f"{cat.tag} side {r}.{n}")
                        for n in range(ctx.params["batch"])]
                m.append(SIDE, bulk)
                rows = [e.item for e in bulk]
                await start(f"S2.add_items([{len(bulk)} answers]) on 'side'",
                            lambda rows=rows: s2.add_items(rows))  # type: ignore[misc]
            # Turns that exist before this round's writes stay put while they are in flight.
            stable = [t for t, _ in m.user_turns(source) if t >= 2]
            await queue_writes(ctx, rec, s, m, source, cat, start, ctx.params["writes"])
            move = rng.randrange(3) if stable else rng.choice((0, 2))
            if move == 1:
                turn, name = rng.choice(stable), f"r{r}"
                if await rec.call(f"S.create_branch_from_turn({turn}, {name!r}) from {source!r}",
                                  s.create_branch_from_turn, turn, name) is not FAILED:
                    m.create(source, turn, name)
                    cur = name
            else:
                target = rng.choice([b for b in m.branches if b not in (source, SIDE)])
                if await rec.call(f"S.switch_to_branch({target!r})", s.switch_to_branch,
                                  target) is not FAILED:
                    cur = target
                if move == 2 and source != MAIN and len(m.branches) > 4:
                    if await rec.call(f"S.delete_branch({source!r}) with its writes in flight",
                                      s.delete_branch, source) is not FAILED:
                        m.delete(source)
            await queue_writes(ctx, rec, s, m, cur, cat, start, max(1, ctx.params["writes"] // 2))
    for branch in m.branches:
        await check_items(rec, s, m, branch, "S", cur)
        await check_usage(rec, s, m, branch, "S", explicit=True)
    await check_listing(rec, s, m, "S", cur)
    await check_usage(rec, s, m, cur, "S", branches=list(m.branches))
    return rec.trial()


CHECK = CheckSpec(
    id="ARIB-BRANCH-002",
    invariant="add_items, pop_item and store_run_usage act on the branch that was current when "
    "they were called, in the order they were called, whatever switch_to_branch, "
    "create_branch_from_turn or delete_branch runs while they are in flight; a deleted branch "
    "stays deleted; every call returns",
    fault="rounds of seeded writes (turns, answers, pops, usage) started one after another on "
    "one instance, behind a large append by a second instance on its own branch, and left in "
    "flight while a switch, a branch creation, or a switch and the deletion of the branch "
    "they write to is awaited; then more writes on the new branch",
    params=(
        Param("rounds", 5, 1, 50, "rounds of writes and a branch operation"),
        Param("writes", 6, 1, 50, "writes started before each branch operation"),
        Param("batch", 40, 0, 5000, "items a second instance appends on its own branch as "
              "each round starts (0: none)"),
        trials_param(3),
    ),
    run_trial=run_trial,
    mutants=(
        "reference_add_follows_later_switch",
        "advanced_append_files_under_write_time_branch",
    ),
    generated=(
        Selector("reference", "ReferenceSession.pop_item", "early_return"),
        Selector("advanced-sqlite-file", "AdvancedSQLiteSession.add_items.<locals>._add_items_sync",
                 "flip_comparison"),
        Selector("advanced-sqlite-file", "AdvancedSQLiteSession.pop_item.<locals>._pop_item_sync",
                 "flip_comparison"),
    ),
    timeout_s=60.0,
    hang_invariant=True,
    preload=SDK_TYPES,
)
