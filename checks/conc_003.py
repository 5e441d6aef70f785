"""ARIB-CONC-003: a write after close is refused loudly, never silently committed or dropped."""

from __future__ import annotations

from checks.base import CheckSpec, Param, Selector, TrialContext, describe
from checks.common import canonical, read_items
from harness.model import Counts, Trial

MODES = ("loud_refusal", "silent_drop", "silent_commit", "raise_but_committed")


async def run_trial(ctx: TrialContext) -> Trial:
    handle = await ctx.open()
    session = handle.session
    before = {"role": "user", "content": f"{ctx.seed:x} written before close"}
    after = {"role": "user", "content": f"{ctx.seed:x} written after close"}
    ctx.log("add_items([before]); close()")
    try:
        await session.add_items([before])
        await ctx.close(session)
    except Exception as exc:  # noqa: BLE001
        return Trial(ctx.index, ctx.seed, True, Counts(errors=1), mode="setup_failed",
                     sample=f"write or close before the probe raised {describe(exc)}",
                     ops=tuple(ctx.ops))
    ctx.log("add_items([after])  # on the closed session")
    refused: BaseException | None = None
    try:
        await session.add_items([after])
    except Exception as exc:  # noqa: BLE001 - refusal is the expected outcome
        refused = exc
    ctx.log("fresh instance on the same store: get_items()")
    try:
        probe = await ctx.reopen(handle)
        seen = [canonical(i) for i in await read_items(probe.session)]
    except Exception as exc:  # noqa: BLE001 - a probe that cannot read shows nothing
        return Trial(ctx.index, ctx.seed, True, Counts(lost=1, errors=1), mode="probe_failed",
                     sample=f"probe read raised {describe(exc)}", ops=tuple(ctx.ops))
    committed = canonical(after) in seen
    lost = 0 if canonical(before) in seen else 1
    if refused is not None:
        mode = "raise_but_committed" if committed else "loud_refusal"
    else:
        mode = "silent_commit" if committed else "silent_drop"
    sample = f"{mode}: add_items after close -> {describe(refused)}; committed={committed}"
    return Trial(ctx.index, ctx.seed, mode != "loud_refusal" or lost > 0,
                 Counts(lost=lost, foreign=int(committed)), mode=mode, sample=sample,
                 ops=tuple(ctx.ops))


CHECK = CheckSpec(
    id="ARIB-CONC-003",
    invariant="a write after close is refused loudly, never silently committed or dropped",
    fault="add_items() on a closed session, probed through a fresh instance on the same store",
    params=(Param("trials", 5, 1, 1000, "independent trials, each on a fresh store"),),
    run_trial=run_trial,
    mutants=(
        "reference_silent_drop_after_close",
        "reference_persist_then_raise_after_close",
        "reference_without_close",
        "reference_false_no_close_claim",
        "sqlite_silent_drop_after_close",
        "sqlite_persist_then_raise_after_close",
        "advanced_close_is_a_no_op",
    ),
    generated=(
        Selector("reference", "ReferenceSession.add_items", "early_return"),
        Selector("sqlite-file", "SQLiteSession.add_items", "early_return"),
        Selector("sqlite-file", "SQLiteSession.add_items.<locals>._add_items_sync",
                 "drop_commit"),
        Selector("advanced-sqlite-file",
                 "AdvancedSQLiteSession.add_items.<locals>._add_items_sync", "drop_commit"),
    ),
    requires_close=True,
    requires_terminal_close=True,
    timeout_s=60.0,
)
