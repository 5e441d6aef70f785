"""ARIB-LGSTORE-004 (issue 35): TTL expiry and sweeping. An item put with a TTL is deleted by
``sweep_ttl()`` once its time is up, and the sweep says how many it deleted, also when it runs
while another thread's (or task's) batch fails (the sweeper of a service runs beside requests,
and a request's batch can fail: a sweep that joined that batch's transaction would be undone
with it, its count a lie), and the failed batch leaves none of its puts; items without a
TTL, or whose time is not up, stay; the sweeper started with ``start_ttl_sweeper()`` deletes
expired items on its own, and goes on doing so (a second batch of items expires later),
``stop_ttl_sweeper(timeout)`` stops it and returns True only once it has stopped (the future or
task it returned is done then), and so does ``stop_ttl_sweeper()`` (no timeout: it waits, as
documented) on a sweeper started again; the store goes on working.

Real time, the database's own clock (SQLite's CURRENT_TIMESTAMP has whole seconds,
PostgreSQL's NOW() microseconds): the expiring items get a TTL of 0.001 minutes and the trial
waits past the next whole second after they expire (about 1 s); the sweeper sweeps every 0.004
minutes (0.24 s) and gets 3 s. A store whose class does not offer TTL (``supports_ttl`` False,
InMemoryStore has no sweep_ttl()) or a release without these methods abstains, naming what it
found on the object.

Items get their TTL from ``PutOp.ttl`` in a ``batch``/``abatch`` call (BaseStore's documented
interface), not from ``put(ttl=...)``: BaseStore.put/aput refuse a TTL where the class's
``supports_ttl`` is False, and AsyncSqliteStore (langgraph-checkpoint-sqlite 3.1.2) inherits
False from BaseStore through AsyncBatchedBaseStore, first among its bases, though it takes a
TTLConfig and sweeps.
"""

from __future__ import annotations

import math
import time
from typing import Any

import anyio
import anyio.to_thread

from arib.checks.base import CheckSpec, Selector, TrialContext
from arib.checks.common import RATE_TRIALS, trials_param
from arib.checks.langgraph._contract import Problems, guarded
from arib.checks.langgraph._saver import store_call, store_of
from arib.checks.langgraph._store import needs_keywords, needs_methods, store_method
from arib.ground.model import Trial
from arib.targets.base import NotApplicable
from arib.targets.langgraph.lanes import api_of, is_async

CHECK_ID = "ARIB-LGSTORE-004"
TINY = 0.001  # minutes: 60 ms
LONG = 60.0  # minutes
SWEEP_EVERY = 0.004  # minutes: 0.24 s
SWEEPER_WAIT_S = 3.0
STOP_WAIT_S = 2.0
DOOMED = 3000  # puts of the batch that fails, so that it is still running when the sweep starts
SWEEP_DELAY_S = 0.01
CONFIG = {"refresh_on_read": True}


async def ttl_store(ctx: TrialContext, config: dict[str, Any] | None = None) -> Any:
    """A store of the lane built with a TTL config, or NotApplicable naming why the class
    offers none (found on a plain instance)."""
    from langgraph.store.base import PutOp

    probe = store_of(await ctx.open())
    needs_methods(probe, "sweep_ttl", "start_ttl_sweeper", "stop_ttl_sweeper")
    if "ttl" not in PutOp._fields:
        raise NotApplicable("PutOp has no ttl in this release: TTL was never offered")
    needs_keywords(probe, "get", "refresh_ttl")
    needs_keywords(probe, "search", "refresh_ttl")
    return store_of(await ctx.open_configured(ttl=dict(config or CONFIG)))


async def put_ttl(store: Any, ns: tuple[str, ...], key: str, ttl: float | None) -> None:
    """Put ``{"k": key}`` with ``ttl`` minutes (None: none) as a PutOp of a batch."""
    from langgraph.store.base import PutOp

    await store_call(store, "batch", [PutOp(ns, key, {"k": key}, None, ttl)])


async def past_expiry(ctx: TrialContext) -> None:
    """Sleep until the whole second after an item put now with TTL ``TINY`` expires."""
    now = time.time()
    until = math.floor(now + TINY * 60) + 1.05
    ctx.log(f"wait {until - now:.2f} s (past the next whole second after the expiry)")
    await anyio.sleep(until - now)


async def run_trial(ctx: TrialContext) -> Trial:
    """One trial: expiry by sweep_ttl(), then by the sweeper, then the sweeper stopped."""
    problems = Problems()
    return await guarded(ctx, lambda: _trial(ctx, problems))


async def _trial(ctx: TrialContext, problems: Problems) -> Trial:
    store = await ttl_store(ctx)
    ns = ("ttl", f"{ctx.seed:x}")
    gone = [f"gone-{n}" for n in range(3)]
    kept = {"kept": None, "long": LONG}
    ctx.log(f"put {gone} with ttl {TINY}, 'kept' without, 'long' with ttl {LONG} in {ns}")
    for key in gone:
        await put_ttl(store, ns, key, TINY)
    for key, ttl in kept.items():
        await put_ttl(store, ns, key, ttl)
    await past_expiry(ctx)
    swept = await _sweep_beside_a_failing_batch(ctx, store, ns, problems)
    ctx.log(f"sweep_ttl() gave {swept!r}")
    problems.expect("sweep_ttl()'s count of expired items", len(gone), swept)
    await _expect(store, ns, gone, kept, problems, "after sweep_ttl()")

    sweeper = None
    for round_ in range(2):  # the sweeper keeps sweeping: a second batch of items expires too
        later = [f"swept-{round_}-{n}" for n in range(2)]
        ctx.log(f"put {later} with ttl {TINY}"
                + (f"; start_ttl_sweeper({SWEEP_EVERY})" if sweeper is None else "")
                + f"; poll until they are gone ({SWEEPER_WAIT_S} s at most)")
        for key in later:
            await put_ttl(store, ns, key, TINY)
        if sweeper is None:
            sweeper = await store_method(store, "start_ttl_sweeper", SWEEP_EVERY)
        deadline = time.monotonic() + SWEEPER_WAIT_S
        while time.monotonic() < deadline:
            left = [key for key in later
                    if await store_call(store, "get", ns, key, refresh_ttl=False) is not None]
            if not left:
                break
            await anyio.sleep(0.1)
        await _expect(store, ns, later, kept, problems,
                      f"with the sweeper running (round {round_ + 1})")
        if problems.found:
            break  # a sweeper already seen failing need not be waited for again
    await _stop(ctx, store, sweeper, (STOP_WAIT_S,), problems)
    ctx.log("start the sweeper again and stop it without a timeout")
    await _stop(ctx, store, await store_method(store, "start_ttl_sweeper", SWEEP_EVERY), (),
                problems)
    await store_call(store, "put", ns, "after", {"k": "after"})
    await _expect(store, ns, [], {**kept, "after": None}, problems, "after the stop")
    return problems.trial(ctx, "swept")


async def _sweep_beside_a_failing_batch(ctx: TrialContext, store: Any, ns: tuple[str, ...],
                                        problems: Problems) -> Any:
    """sweep_ttl() started ``SWEEP_DELAY_S`` after a batch of ``DOOMED`` puts whose last
    value cannot be stored (the batch must fail whole): what the sweep returned. A sweep that
    lands inside that batch's transaction must not be undone with it."""
    from langgraph.store.base import PutOp

    doomed = [PutOp(ns, f"doomed-{n}", {"k": n}) for n in range(DOOMED)]
    ops = [*doomed, PutOp(ns, "unstorable", {"k": object()})]
    ctx.log(f"a batch of {DOOMED} puts and one value no store can serialize, and "
            f"{SWEEP_DELAY_S * 1000:g} ms after it sweep_ttl() (from another "
            f"{'task' if is_async(api_of(store)) else 'thread'})")
    outcome: dict[str, Any] = {}

    async def batch() -> None:
        try:  # a store serving the sync half runs it in a thread, beside the sweep's
            outcome["batch"] = await (store.abatch(ops) if is_async(api_of(store)) else
                                      anyio.to_thread.run_sync(store.batch, ops))
        except Exception as exc:  # noqa: BLE001 - the failure expected
            outcome["batch"] = exc

    async def sweep() -> None:
        await anyio.sleep(SWEEP_DELAY_S)
        outcome["sweep"] = await store_method(store, "sweep_ttl")

    async with anyio.create_task_group() as tg:
        tg.start_soon(batch)
        tg.start_soon(sweep)
    ctx.log(f"the batch gave {outcome['batch']!r:.80}")
    if not isinstance(outcome["batch"], Exception):
        problems.add("wrong", f"a batch with a value no store can serialize returned "
                              f"{outcome['batch']!r:.80}")
    left = [op.key for op in doomed
            if await store_call(store, "get", ns, op.key, refresh_ttl=False) is not None]
    if left:
        problems.add("wrong", f"the batch failed, yet {len(left)} of its puts are there "
                              f"({left[:3]})")
    return outcome["sweep"]


async def _stop(ctx: TrialContext, store: Any, sweeper: Any, args: tuple[float, ...],
                problems: Problems) -> None:
    """stop_ttl_sweeper(*args) returns True, and only once the sweeper it stops is done."""
    try:
        with anyio.fail_after(2 * STOP_WAIT_S):
            stopped = await store_method(store, "stop_ttl_sweeper", *args)
    except TimeoutError:
        stopped = f"no answer in {2 * STOP_WAIT_S:g} s"
    ctx.log(f"stop_ttl_sweeper{args or '()'} gave {stopped!r}")
    problems.expect(f"stop_ttl_sweeper{args or '()'}", True, stopped)
    problems.expect(f"the sweeper start_ttl_sweeper() returned, done when "
                    f"stop_ttl_sweeper{args or '()'} has returned", True, sweeper.done())


async def _expect(store: Any, ns: tuple[str, ...], gone: list[str], kept: dict[str, Any],
                  problems: Problems, when: str) -> None:
    """``gone`` keys are gone, ``kept`` ones there with their values (get and search)."""
    for key in gone:
        got = await store_call(store, "get", ns, key, refresh_ttl=False)
        if got is not None:
            problems.add("wrong", f"{when}: expired {key} is still there")
    for key in kept:
        got = await store_call(store, "get", ns, key, refresh_ttl=False)
        if getattr(got, "value", None) != {"k": key}:
            problems.add("lost", f"{when}: {key} (not expired) reads {got!r:.100}")
    found = await store_call(store, "search", ns, limit=100, refresh_ttl=False)
    keys = sorted(item.key for item in found) if isinstance(found, list) else found
    problems.expect(f"{when}: the keys a search of {ns} gives", sorted(kept), keys)


CHECK = CheckSpec(
    id=CHECK_ID,
    invariant="sweep_ttl() deletes exactly the items whose TTL is up and says how many, also "
    "beside a batch that fails; the sweeper deletes them on its own; stop_ttl_sweeper() stops "
    "it and the store goes on",
    fault="items put with a 0.001-minute TTL beside items without one or with a long one; "
    "real time past their expiry, then a sweep started 10 ms after a batch of 3000 puts that "
    "fails on its last value, a sweeper every 0.24 s, a stop",
    # Where the sweep and the failing batch share one connection (PostgresStore), which of
    # them gets there first is real time, and the wrong count is seen at a rate.
    params=(trials_param(RATE_TRIALS, "independent trials, each on a fresh store (the sweep "
                                      "beside the failing batch is a real-time race)"),),
    run_trial=run_trial,
    mutants=("lg_store_reference_sweep_takes_unexpired", "lg_sqlite_store_sweep_counts_only",
             "lg_async_sqlite_store_stop_leaves_sweeper"),
    generated=(Selector("lg-store-async-sqlite-file", "AsyncSqliteStore.sweep_ttl", "*"),
               Selector("lg-store-reference", "ReferenceStore.sweep_ttl", "drop_lock"),
               Selector("lg-store-async-sqlite-file", "AsyncSqliteStore.stop_ttl_sweeper",
                        "early_return")),
    timeout_s=90.0,  # four trials of about 3 s each, several times that on a loaded machine
    reference="lg-store-reference",
)
