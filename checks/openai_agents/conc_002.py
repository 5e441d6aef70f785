"""ARIB-CONC-002: close() is idempotent under concurrency."""

from __future__ import annotations

from arib.checks.base import (
    CheckSpec,
    Param,
    ParityFault,
    SchedulePlan,
    Selector,
    TrialContext,
    describe,
    race,
    race_close,
)
from arib.checks.common import trials_param
from arib.ground.model import Counts, Trial


async def run_trial(ctx: TrialContext) -> Trial:
    """One trial: overlapping close() calls, then concurrent reads that must all be refused."""
    closers = ctx.params["closers"]
    handle = await ctx.open()
    session = handle.session
    ctx.log("add_items([1 item]); get_items()  # open the backend's connections")
    try:
        await session.add_items([{"role": "user", "content": f"{ctx.seed:x} before close"}])
        await session.get_items()
    except Exception as exc:  # noqa: BLE001 - a backend that cannot be used before close
        return Trial(ctx.index, ctx.seed, True, Counts(raised=1), mode="setup_failed",
                     sample=f"use before close raised {describe(exc)}", ops=tuple(ctx.ops))
    ctx.log(f"{closers} x close() released together")
    outcome = await race_close(ctx, session, closers)
    raised = [exc for exc in outcome if exc is not None]
    probes = ctx.params["probes"]
    ctx.log(f"{probes} x get_items() released together  # each must be refused: closed")
    # Several concurrent probes reach fresh worker threads too: a thread-backed session that
    # only refuses on threads whose connection was closed is caught as well.
    refusals = await race([session.get_items for _ in range(probes)])
    still_open = any(exc is None for exc in refusals)
    if raised:
        mode, sample = "close_raised", "; ".join(describe(e) for e in raised[:2])
    elif still_open:
        opened = sum(1 for exc in refusals if exc is None)
        mode, sample = "still_open", (f"{opened}/{probes} get_items() succeeded after every "
                                      f"close() returned")
    else:
        mode, sample = "idempotent", None
    violated = bool(raised) or still_open
    return Trial(ctx.index, ctx.seed, violated, Counts(raised=len(raised)), mode=mode,
                 sample=sample, ops=tuple(ctx.ops))


CHECK = CheckSpec(
    id="ARIB-CONC-002",
    invariant="close() is idempotent under concurrency: overlapping closes raise nothing and "
    "leave the session closed",
    fault="concurrent close() calls released from one barrier (tasks for an async close, "
    "threads for a sync one)",
    params=(
        Param("closers", 2, 2, 16, "concurrent close() calls"),
        Param("probes", 4, 1, 32, "concurrent reads after the closes, each must be refused"),
        trials_param(5),
    ),
    run_trial=run_trial,
    mutants=(
        "reference_racy_close",
        "reference_without_close",
        "reference_false_no_close_claim",
        "sqlite_racy_close",
        "advanced_racy_close",
    ),
    generated=(
        Selector("reference", "ReferenceSession.close", "early_return"),
        Selector("reference", "ReferenceSession.close", "drop_closed_guard"),
        Selector("sqlite-file", "SQLiteSession._get_connection", "drop_closed_guard"),
        Selector("sqlite-file", "SQLiteSession.get_items", "drop_await"),
        Selector("advanced-sqlite-file", "AdvancedSQLiteSession.get_items", "drop_await"),
    ),
    equivalent={
        "m-560239ba6e9f": "ReferenceSession.close without its closed-state guard is still "
        "idempotent: it swaps the connection out under the lock and closes it only if present",
    },
    requires_close=True,
    requires_terminal_close=True,
    timeout_s=60.0,
    concurrent=True,
    schedule=SchedulePlan("random", {"w": 75}, timers="virtual"),
    parity=(
        ParityFault(
            "fault_concurrent_close", "fault:close",
            "four close() calls at once, then reads: idempotent and refused",
            "arib.checks.openai_agents.parity.faults:ConcurrentClose",
        ),
    ),
)
