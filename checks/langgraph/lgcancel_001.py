"""ARIB-LGCANCEL-001: an aput or aput_writes cancelled at any of its suspensions leaves all of
it or none, the same for every reader, and the saver usable after.

The cancellation point is counted in the call's own suspensions (arib.checks._suspend, as in
ARIB-CANCEL-001): the call runs in its own asyncio task behind a counting wrapper and is
cancelled just before its k-th suspension. For each of the two operations, a dry run (k = 0)
counts the suspensions n an uncancelled call makes; then every k = 1 .. min(n, ``points``) in
a seeded order, each on a fresh store:

1. open a saver, put a base checkpoint and list the thread (so the cancelled call runs warm);
2. the operation (a child checkpoint of the base, or a task's writes to the base), cancelled
   at its k-th suspension;
3. the caller lists through its own saver, and a fresh instance lists the store (where one
   can open it): both must show the operation wholly there or wholly absent, and the same;
4. the caller retries when it saw it absent, then puts one more checkpoint with its writes;
5. a fresh instance lists: the operation there once, with its values, and the next one too.

A call that returned must have stored its operation. Modes per point: ``returned``, ``absent``
or ``present`` then ``once`` (held), or ``partial``, ``divergent_view``, ``lost``,
``poisoned_saver``, ``hung_after_cancel``, ``*_then_lost`` (violated). A lane whose class
serves only the sync half abstains: its async methods make no suspension to cancel at. Where
no second instance can open the store (``:memory:``), only the caller's view is judged.
"""

from __future__ import annotations

from typing import Any

import anyio

from arib.checks.base import CheckSpec, NotApplicable, Param, Selector, TrialContext, describe
from arib.checks.common import RATE_TRIALS, trials_param
from arib.checks.langgraph._cancelled import (
    HELD,
    SETUP_FAILED,
    Point,
    Words,
    cancelled_at,
    judge_point,
    pinned_note,
    point_counts,
)
from arib.checks.langgraph._faults import Op, read_threads, writer_plan
from arib.ground.model import Trial
from arib.targets.base import BuildContext, Handle
from arib.targets.langgraph.lanes import api_of

CHECK_ID = "ARIB-LGCANCEL-001"
OP_TIMEOUT_S = 5.0
WORDS = Words(poisoned="poisoned_saver", read="list", partial="half there", undone="absent",
              next_op="next op")
WIDTH = 3  # writes in the cancelled put_writes


def state(op: Op, seen: Any) -> str:
    """'present', 'absent' or 'partial': how much of ``op`` a read-back shows."""
    got = seen.get(op.thread, {}).get(op.checkpoint_id)
    if op.kind == "put":
        if got is None:
            return "absent"
        return "present" if got[0] == dict(op.checkpoint["channel_values"]) else "partial"
    have = len(op.triples() & (got[1] if got else set()))
    return "absent" if have == 0 else "present" if have == len(op.writes) else "partial"


async def _read(saver: Any, thread: str) -> Any:
    with anyio.fail_after(OP_TIMEOUT_S):
        return await read_threads(saver, [thread])


async def _point(ctx: TrialContext, kind: str, k: int, notes: list[str],
                 spent: dict[tuple[str, int], int]) -> str:
    """One cancellation point of one operation on a fresh store: its mode."""
    root = ctx.build.root / f"{kind}-k{k}"
    root.mkdir()
    build = BuildContext(root, ctx.build.session_id, ctx.build.services)
    handles: list[Handle] = []
    thread = f"t{ctx.seed:x}-{kind}-{k}"

    async def fresh() -> Any:
        handle = await ctx.target.build(build)
        handles.append(handle)
        return handle.session

    try:
        handle = await ctx.target.build(build)
        handles.append(handle)
        saver = handle.session
        base, base_writes, child, child_writes, after, after_writes = writer_plan(
            saver, ctx.seed, 0, thread, 3, width=WIDTH)
        op = child if kind == "put" else base_writes
        try:
            await base.run(saver)
            await _read(saver, thread)
        except Exception as exc:  # noqa: BLE001
            notes.append(f"{kind} k={k}: setup raised {describe(exc)}")
            return SETUP_FAILED
        ended, spent[(kind, k)], error = await cancelled_at(lambda: op.run(saver), k)

        async def own_state() -> str:
            return state(op, await _read(saver, thread))

        async def fresh_state() -> str:
            return state(op, await _read(await fresh(), thread))

        async def redo(own: str) -> None:
            if own == "absent":
                await op.run(saver)
            if kind == "writes":
                await child.run(saver)
            await after.run(saver)
            await after_writes.run(saver)

        async def final() -> tuple[bool, str]:
            got = await _read(saver if handle.private_store else await fresh(), thread)
            states = (state(op, got), state(after, got), state(after_writes, got))
            return (states == ("present",) * 3,
                    f"in the end it, the next checkpoint and its writes are {states}")

        return await judge_point(
            Point(f"{kind} k={k}: {ended}{f' {describe(error)}' if error else ''}", ended,
                  own_state, None if handle.private_store else fresh_state, redo, final),
            WORDS, notes, OP_TIMEOUT_S)
    finally:
        for opened in reversed(handles):
            with anyio.CancelScope(shield=True):
                await opened.dispose()


async def run_trial(ctx: TrialContext) -> Trial:
    """One trial: aput and aput_writes each cancelled at every sampled suspension."""
    probe = await ctx.open()
    if api_of(probe.session) == "sync":
        raise NotApplicable(f"{CHECK_ID} does not apply to {ctx.target.name!r}: "
                            f"{type(probe.session).__name__} serves the sync half of the saver "
                            f"interface; its aput/aput_writes make no suspension to cancel at")
    await ctx.dispose()
    notes: list[str] = []
    modes: dict[tuple[str, int], str] = {}
    spent: dict[tuple[str, int], int] = {}
    ctx.log(f"for aput (a child of a base checkpoint) and aput_writes ({WIDTH} writes to the "
            f"base), each on a fresh store: put the base; list; the op cancelled at its k-th "
            f"suspension (k=0: not cancelled, counts them); list by the caller and by a fresh "
            f"instance; retry if absent; put the next checkpoint and its writes; list fresh")
    ctx.log(pinned_note())
    for kind in ("put", "writes"):
        modes[(kind, 0)] = await _point(ctx, kind, 0, notes, spent)
        points = list(range(1, min(spent.get((kind, 0), 0), ctx.params["points"]) + 1))
        ctx.rng.shuffle(points)
        ctx.log(f"{kind}: {spent.get((kind, 0), 0)} suspensions; points in order {points}")
        for k in points:
            modes[(kind, k)] = await _point(ctx, kind, k, notes, spent)
    ctx.log("modes: " + ", ".join(f"{kind} k={k}: {mode}" for (kind, k), mode in
                                  sorted(modes.items())))
    bad = sorted(key for key, mode in modes.items() if mode not in HELD)
    mode = modes[bad[0]] if bad else "+".join(sorted(set(modes.values())))
    return Trial(ctx.index, ctx.seed, bool(bad), point_counts(modes.values(), WORDS),
                 mode=mode,
                 sample="; ".join(notes[:2]) or None, ops=tuple(ctx.ops))


CHECK = CheckSpec(
    id=CHECK_ID,
    invariant="an aput or aput_writes cancelled at any of its suspensions leaves all of it or "
    "none, the same for the caller and a fresh instance, and the saver usable after",
    fault="aput and aput_writes each cancelled at its k-th suspension, for every k up to the "
    "suspensions an uncancelled call makes (at most points), each on a fresh store",
    params=(
        Param("points", 12, 1, 64, "at most this many cancellation points per operation"),
        trials_param(RATE_TRIALS, "independent trials (seeded point order)"),
    ),
    run_trial=run_trial,
    mutants=("lg_reference_cancel_half_writes", "lg_async_sqlite_cancel_half_writes"),
    generated=(
        Selector("lg-reference", "ReferenceSaver.aput_writes", "early_return"),
        Selector("lg-reference", "ReferenceSaver.aput", "early_return"),
        Selector("lg-async-sqlite-memory", "AsyncSqliteSaver.aput", "early_return"),
        Selector("lg-async-sqlite-memory", "AsyncSqliteSaver.aput_writes", "early_return"),
    ),
    timeout_s=60.0,
)
