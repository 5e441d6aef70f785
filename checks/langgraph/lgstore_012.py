"""ARIB-LGSTORE-012 (issue 35): leaving ``from_conn_string``'s context releases the TTL sweeper
started inside it. An application opens its store the documented way (``with
Store.from_conn_string(...) as store`` / ``async with``), sets it up and starts the sweeper its
TTL config needs (``start_ttl_sweeper()``, which the stores document must be called
explicitly); once the context is left (the store's connection is closed) the sweeper must be
stopped: the future or task ``start_ttl_sweeper()`` returned done within ``STOP_WAIT_S``. A
sweeper left running is a thread or task per store that lives as long as the process, wakes
every interval and fails every sweep on the closed connection; a service that opens a store
per job gains one each time. The evidence names the sweeper and what it logged after the
context was left (the stores log each failed sweep).

The sweep interval is short (``SWEEP_EVERY``), so the leaked sweeper has swept the closed
connection within the wait. The check stops a leaked sweeper itself afterwards (a thread:
``stop_ttl_sweeper``; a task: cancelled), so that it does not outlive the trial. A lane whose
class has no ``from_conn_string`` or no sweeper (InMemoryStore) abstains, naming it.
"""

from __future__ import annotations

import contextlib
import logging
from typing import Any

import anyio

from arib.checks.base import CheckSpec, Selector, TrialContext, describe
from arib.checks.common import trials_param
from arib.checks.langgraph._contract import Problems, guarded
from arib.checks.langgraph._saver import store_call
from arib.checks.langgraph._store import needs_methods, store_method
from arib.ground.model import Trial
from arib.targets.langgraph.stores import conn_string

CHECK_ID = "ARIB-LGSTORE-012"
SWEEP_EVERY = 0.004  # minutes: 0.24 s
STOP_WAIT_S = 0.6


class _Records(logging.Handler):
    """The log records at WARNING or above while it is installed on the root logger."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.seen: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.seen.append(f"{record.name}: {record.getMessage()}"
                         + (f" ({describe(record.exc_info[1])})" if record.exc_info else ""))


async def run_trial(ctx: TrialContext) -> Trial:
    """One trial: open by string, set up, put, start the sweeper, leave; is it stopped?"""
    problems = Problems()
    return await guarded(ctx, lambda: _trial(ctx, problems))


async def _trial(ctx: TrialContext, problems: Problems) -> Trial:
    cls: Any = ctx.target.backend_class()
    needs_methods(cls, "from_conn_string", "setup", "start_ttl_sweeper", "stop_ttl_sweeper")
    target = conn_string(ctx.target.name, ctx.target.module, ctx.build)
    ttl = {"default_ttl": 60, "sweep_interval_minutes": SWEEP_EVERY}
    ctx.log(f"{cls.__name__}.from_conn_string(<the trial's store>, ttl={ttl}): setup(), put, "
            f"start_ttl_sweeper(); leave the context; wait up to {STOP_WAIT_S:g} s for the "
            f"sweeper to be done")
    opened = cls.from_conn_string(target, ttl=ttl)
    if hasattr(opened, "__aenter__"):
        async with opened as store:
            sweeper = await _inside(store)
    else:
        with opened as store:
            sweeper = await _inside(store)
    records = _Records()
    logging.getLogger().addHandler(records)
    try:
        with anyio.move_on_after(STOP_WAIT_S):
            while not sweeper.done():
                await anyio.sleep(0.02)
        if sweeper.done():
            ctx.log("the sweeper was done after the context was left")
        else:
            logged = "; ".join(records.seen[:2]) or "nothing logged"
            problems.add("leaked", f"the TTL sweeper ({type(sweeper).__name__}) still runs "
                                   f"{STOP_WAIT_S:g} s after from_conn_string's context was "
                                   f"left (the connection closed); meanwhile: {logged:.200}")
    finally:
        logging.getLogger().removeHandler(records)
        await _stop(store, sweeper)
    return problems.trial(ctx, "released")


async def _inside(store: Any) -> Any:
    """Inside the context: setup(), a put, the sweeper started; the future or task it gave."""
    await store_method(store, "setup")
    await store_call(store, "put", ("sweep", "0"), "k", {"v": 1})
    return await store_method(store, "start_ttl_sweeper")


async def _stop(store: Any, sweeper: Any) -> None:
    """Stop a sweeper the context left running, so that it does not outlive the trial."""
    if sweeper.done():
        return
    cancel = getattr(sweeper, "cancel", None)
    if hasattr(sweeper, "get_loop") and cancel is not None:  # an asyncio task
        cancel()
        return
    with contextlib.suppress(Exception):
        await store_method(store, "stop_ttl_sweeper", timeout=STOP_WAIT_S)


CHECK = CheckSpec(
    id=CHECK_ID,
    invariant="leaving a store's from_conn_string context stops the TTL sweeper started in it: "
    "no sweeper thread or task outlives the closed connection",
    fault="a store opened with from_conn_string and a TTL config sweeping every 0.24 s, its "
    "sweeper started inside the context, the context left",
    params=(trials_param(1),),
    run_trial=run_trial,
    mutants=("lg_store_reference_exit_keeps_sweeper",),
    generated=(Selector("lg-store-reference", "ReferenceStore.stop_ttl_sweeper",
                        "flip_comparison"),),
    timeout_s=30.0,
    reference="lg-store-reference",
)
