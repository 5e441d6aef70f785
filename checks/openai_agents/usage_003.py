"""ARIB-USAGE-003: store_run_usage never loses a run's usage silently.

Agent code calls ``await session.store_run_usage(result)`` after ``Runner.run`` and then
believes the cost is on record. The call either records the usage for the current turn, or
it must raise so the caller knows it did not. The fault here is the simplest real one: the
session was closed (a shutdown racing the end of a run); a store on a closed session must
raise, like every other write after close, and record nothing.

The check stores usage for a turn (it must be reported), writes a second turn, closes the
session, stores usage again (it must raise), and reads the figures through a fresh instance:
exactly the first turn's.
"""

from __future__ import annotations

from arib.checks.base import CheckSpec, Selector, TrialContext, describe
from arib.checks.common import trials_param
from arib.checks.openai_agents._adv_model import MAIN, Catalogue, Figures, Model
from arib.checks.openai_agents._adv_probe import (
    FAILED,
    SDK_TYPES,
    USAGE_API,
    Recorder,
    check_usage,
    require,
    run_result,
)
from arib.checks.openai_agents._adv_world import reopen, store_usage, write_turn
from arib.ground.model import Trial


async def run_trial(ctx: TrialContext) -> Trial:
    """One trial: usage stored, the session closed; a later store must raise and record nothing."""
    handle = await ctx.open()
    s = handle.session
    require(s, USAGE_API)
    rec, rng, cat, m = Recorder(ctx), ctx.rng, Catalogue(f"{ctx.seed:016x}"), Model()
    for n in (1, 2):
        await write_turn(rec, s, "S", m, MAIN,
                         [cat.user(f"{cat.tag} q{n}"), *cat.responses(rng, ("lookup",))], False)
        if n == 1:
            await store_usage(rec, s, "S", m, MAIN, Figures.draw(rng))
            await check_usage(rec, s, m, MAIN, "S")
    if await rec.call("S.close()", ctx.close, s) is FAILED:
        return rec.trial()
    figures = Figures.draw(rng)
    ctx.log(f"S.store_run_usage(usage {figures.totals()}) on the closed session "
            f"(must raise)")
    try:
        await s.store_run_usage(run_result(figures))
    except Exception as exc:  # noqa: BLE001 - the refusal is what is expected
        ctx.log(f"raised {describe(exc)}")
    else:
        rec.fail("silently_dropped", "store_run_usage on a closed session returned normally "
                 "(the run's usage was neither recorded nor refused)")
    fresh = await reopen(ctx, rec, handle, "S2")
    if fresh is not FAILED:
        await check_usage(rec, fresh, m, MAIN, "S2")
    return rec.trial()


CHECK = CheckSpec(
    id="ARIB-USAGE-003",
    invariant="store_run_usage records a run's usage for the current turn or raises: on a "
    "closed session it raises and records nothing",
    fault="usage stored for a turn, a second turn written, the session closed, usage stored "
    "again; the figures read through a fresh instance",
    params=(trials_param(1),),
    run_trial=run_trial,
    mutants=("reference_store_usage_swallows_errors",),
    generated=(Selector("reference", "ReferenceSession.close", "early_return"),),
    requires_close=True,
    requires_terminal_close=True,
    timeout_s=60.0,
    preload=SDK_TYPES,
)
