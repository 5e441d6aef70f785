"""ARIB-CONC-001: concurrent appends are all visible, none lost, duplicated or foreign."""

from __future__ import annotations

from arib.checks.base import (
    Barrier,
    CheckSpec,
    Param,
    ParityFault,
    SchedulePlan,
    Selector,
    TrialContext,
    actors,
    describe,
)
from arib.checks.common import first_differences, read_items, tally, trials_param
from arib.ground.model import Counts, Trial


async def run_trial(ctx: TrialContext) -> Trial:
    """One trial: N writers append concurrently, then the history is read back and tallied."""
    writers, appends = ctx.params["writers"], ctx.params["appends"]
    handle = await ctx.open()
    session = handle.session
    tag = f"{ctx.seed:016x}"
    plan = {w: [{"role": "user", "content": f"{tag}-w{w}-{i}"} for i in range(appends)]
            for w in range(writers)}
    order = list(plan)
    ctx.rng.shuffle(order)
    ctx.log(f"{writers} writers x {appends} appends released together, start order {order}")
    barrier = Barrier(writers)
    errors: list[str] = []

    async def writer(w: int) -> None:
        await barrier.wait()
        for item in plan[w]:
            try:
                await session.add_items([item])
            except Exception as exc:  # noqa: BLE001 - a writer error is evidence
                errors.append(f"writer {w}: {describe(exc)}")

    async with actors() as group:
        for w in order:
            group.start_soon(writer, w, name=f"writer {w}")
    expected = [item for w in order for item in plan[w]]
    ctx.log("get_items()")
    try:
        seen = await read_items(session)
    except Exception as exc:  # noqa: BLE001 - a read that raises shows nothing written
        return Trial(ctx.index, ctx.seed, True, Counts(lost=len(expected), raised=len(errors) + 1),
                     mode="read_raised", sample=f"get_items raised {describe(exc)}",
                     ops=tuple(ctx.ops))
    counts = tally(expected, seen, raised=len(errors))
    sample = "; ".join(errors[:2]) or first_differences(expected, seen) or None
    return Trial(ctx.index, ctx.seed, counts.total > 0, counts,
                 mode="lossy" if counts.total else "exact", sample=sample, ops=tuple(ctx.ops))


CHECK = CheckSpec(
    id="ARIB-CONC-001",
    invariant="N concurrent appends leave N visible items: 0 lost, 0 duplicated, 0 foreign, "
    "0 writer errors",
    fault="writers x appends single-item add_items() calls, all writers released together",
    params=(
        Param("writers", 8, 1, 64, "concurrent writer tasks"),
        Param("appends", 25, 1, 1000, "appends per writer"),
        trials_param(2),
    ),
    run_trial=run_trial,
    mutants=(
        "reference_lost_update",
        "reference_corrupts_content",
        "reference_read_crashes",
        "sqlite_drops_every_tenth_append",
        "advanced_corrupts_content",
        "async_sqlite_read_crashes",
        "async_sqlite_duplicates_on_yield",
        "sqlalchemy_injects_foreign_item",
        "sqlalchemy_read_drops_newest",
    ),
    generated=(
        Selector("reference", "ReferenceSession.add_items", "early_return"),
        Selector("sqlite-file", "SQLiteSession.add_items", "early_return"),
        Selector("sqlite-file", "SQLiteSession.add_items", "drop_await"),
        Selector("advanced-sqlite-file", "AdvancedSQLiteSession.add_items", "early_return"),
        Selector("async-sqlite-file", "AsyncSQLiteSession.add_items", "early_return"),
        Selector("sqlalchemy-sqlite-file", "SQLAlchemySession.add_items", "drop_await"),
    ),
    timeout_s=60.0,
    concurrent=True,
    schedule=SchedulePlan("random", timers="virtual"),
    parity=(
        ParityFault(
            "fault_concurrent_appends", "fault:concurrency",
            "four writers append three items each, together: every item once, in writer "
            "order",
            "arib.checks.openai_agents.parity.races:ConcurrentAppends",
        ),
    ),
)
