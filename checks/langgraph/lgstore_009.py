"""ARIB-LGSTORE-009 (issue 35): an ``abatch`` of writes cancelled at any of its suspensions
leaves all of it or none, the same for the caller and a fresh instance, and the store usable
after (the ARIB-LGCANCEL-001 fault, on a store).

The batch is [put ``new1``, delete ``old``, put ``new2``] in one namespace that already holds
``old`` (so that it takes a delete and an insert: two statements on the SQL stores). The
cancellation point is counted in the call's own suspensions (``arib.checks._suspend``): a dry run
(k = 0) counts the suspensions n of an uncancelled batch; then every k = 1 .. min(n,
``points``) in a seeded order, each on a fresh store:

1. open a store, put ``old`` and read it (so the cancelled call runs warm);
2. the batch, cancelled just before its k-th suspension;
3. the caller reads the three keys through its own store, and a fresh instance reads them
   (where one can open the store): both must show the batch wholly done or wholly undone, and
   the same;
4. the caller retries the batch when it saw it undone, then puts one more key;
5. a fresh instance reads: the batch done once and the last key there.

A batch that returned must be done. Modes per point: ``returned``, ``absent`` or ``present``
then ``once`` (held), or ``partial``, ``divergent_view``, ``lost``, ``poisoned_store``,
``hung_after_cancel``, ``*_then_lost`` (violated). A lane whose class serves only the sync half
abstains: its abatch makes no suspension to cancel at.
"""

from __future__ import annotations

from typing import Any

import anyio

from arib.checks.base import CheckSpec, NotApplicable, Param, Selector, TrialContext, describe
from arib.checks.common import trials_param
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
from arib.checks.langgraph._saver import store_of
from arib.ground.model import Trial
from arib.targets.base import BuildContext, Handle
from arib.targets.langgraph.lanes import api_of

CHECK_ID = "ARIB-LGSTORE-009"
OP_TIMEOUT_S = 5.0
WORDS = Words(poisoned="poisoned_store", read="read", partial="half done", undone="undone",
              next_op="next put")
NEW = {"new1": {"v": "one"}, "new2": {"v": "two"}}
OLD = {"v": "old"}


def the_batch(ns: tuple[str, ...]) -> list[Any]:
    """[put new1, delete old, put new2]."""
    from langgraph.store.base import PutOp

    return [PutOp(ns, "new1", NEW["new1"]), PutOp(ns, "old", None),
            PutOp(ns, "new2", NEW["new2"])]


async def state(store: Any, ns: tuple[str, ...]) -> str:
    """'present' (the batch wholly done), 'absent' (wholly undone) or 'partial'."""
    from langgraph.store.base import GetOp

    with anyio.fail_after(OP_TIMEOUT_S):
        got = await store.abatch([GetOp(ns, key) for key in ("new1", "old", "new2")])
    values = [getattr(item, "value", None) for item in got]
    if values == [NEW["new1"], None, NEW["new2"]]:
        return "present"
    if values == [None, OLD, None]:
        return "absent"
    return "partial"


async def _point(ctx: TrialContext, k: int, notes: list[str], spent: dict[int, int]) -> str:
    """One cancellation point on a fresh store: its mode."""
    from langgraph.store.base import PutOp

    root = ctx.build.root / f"k{k}"
    root.mkdir()
    build = BuildContext(root, ctx.build.session_id, ctx.build.services, ctx.build.options)
    handles: list[Handle] = []
    ns = ("cancel", f"{ctx.seed:x}", str(k))

    async def fresh() -> Any:
        handles.append(await ctx.target.build(build))
        return store_of(handles[-1])

    try:
        handles.append(await ctx.target.build(build))
        handle, store = handles[0], store_of(handles[0])
        try:
            with anyio.fail_after(OP_TIMEOUT_S):
                await store.abatch([PutOp(ns, "old", OLD)])
                await state(store, ns)
        except Exception as exc:  # noqa: BLE001
            notes.append(f"k={k}: setup raised {describe(exc)}")
            return SETUP_FAILED
        ended, spent[k], error = await cancelled_at(lambda: store.abatch(the_batch(ns)), k)

        async def fresh_state() -> str:
            return await state(await fresh(), ns)

        async def redo(own: str) -> None:
            if own == "absent":
                await store.abatch(the_batch(ns))
            await store.abatch([PutOp(ns, "after", {"v": "after"})])

        async def final() -> tuple[bool, str]:
            reader = store if handle.private_store else await fresh()
            done = await state(reader, ns)
            with anyio.fail_after(OP_TIMEOUT_S):
                after = await reader.aget(ns, "after")
            return (done == "present" and after is not None,
                    f"in the end the batch is {done}, the next put "
                    f"{'there' if after is not None else 'missing'}")

        return await judge_point(
            Point(f"k={k}: {ended}{f' {describe(error)}' if error else ''}", ended,
                  lambda: state(store, ns), None if handle.private_store else fresh_state,
                  redo, final), WORDS, notes, OP_TIMEOUT_S)
    finally:
        for opened in reversed(handles):
            with anyio.CancelScope(shield=True):
                await opened.dispose()


async def run_trial(ctx: TrialContext) -> Trial:
    """One trial: the batch cancelled at every sampled suspension."""
    probe = store_of(await ctx.open())
    if api_of(probe) == "sync":
        raise NotApplicable(f"{CHECK_ID} does not apply to {ctx.target.name!r}: "
                            f"{type(probe).__name__} serves the sync half of the store "
                            f"interface; its abatch makes no suspension to cancel at")
    await ctx.dispose()
    notes: list[str] = []
    modes: dict[int, str] = {}
    spent: dict[int, int] = {}
    ctx.log("on a fresh store each: put 'old'; read; abatch [put new1, delete old, put new2] "
            "cancelled at its k-th suspension (k=0: not cancelled, counts them); read by the "
            "caller and a fresh instance; retry if undone; put 'after'; read fresh")
    ctx.log(pinned_note())
    modes[0] = await _point(ctx, 0, notes, spent)
    points = list(range(1, min(spent.get(0, 0), ctx.params["points"]) + 1))
    ctx.rng.shuffle(points)
    ctx.log(f"{spent.get(0, 0)} suspensions; points in order {points}")
    for k in points:
        modes[k] = await _point(ctx, k, notes, spent)
    ctx.log("modes: " + ", ".join(f"k={k}: {mode}" for k, mode in sorted(modes.items())))
    bad = sorted(k for k, mode in modes.items() if mode not in HELD)
    mode = modes[bad[0]] if bad else "+".join(sorted(set(modes.values())))
    return Trial(ctx.index, ctx.seed, bool(bad), point_counts(modes.values(), WORDS),
                 mode=mode,
                 sample="; ".join(notes[:2]) or None, ops=tuple(ctx.ops))


CHECK = CheckSpec(
    id=CHECK_ID,
    invariant="an abatch of writes cancelled at any of its suspensions leaves all of it or "
    "none, the same for the caller and a fresh instance, and the store usable after",
    fault="abatch [put, delete, put] cancelled at its k-th suspension, for every k up to the "
    "suspensions an uncancelled batch makes (at most points), each on a fresh store",
    params=(Param("points", 12, 1, 64, "at most this many cancellation points"),
            trials_param(1, "independent trials (seeded point order)")),
    run_trial=run_trial,
    mutants=("lg_store_reference_abatch_yields_between_ops",
             "lg_store_memory_abatch_yields_between_puts"),
    generated=(Selector("lg-store-reference", "ReferenceStore.abatch", "*"),),
    timeout_s=60.0,
    reference="lg-store-reference",
)
