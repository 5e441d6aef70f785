"""A store's life through ``from_conn_string``, the way applications open one, shared by
ARIB-LGSTORE-007 (one ``setup()``, then concurrent work, then release) and ARIB-LGSTORE-008
(``setup()`` raced on a fresh database).

On the trial's fresh database the store is opened by its connection string; ``setup()`` runs
once; then the workers, released together, put and get back their keys. With
``racing_setup`` (ARIB-LGSTORE-008), ``setup()`` runs in every worker at once (the runs of a
deployment starting together), each worker calls it again before each of its puts (runs
starting while others write), and one worker calls it 10 ms into another's batch of 2000 puts
(which must return, and a fresh instance read it whole); leaving the
context releases the connection (a call on the store after it must raise, never answer from a
closed connection); a fresh instance (the lane's builder) then reads every write. For a class
whose own context's exit is documented to stop the TTL sweeper (the async stores'
``__aexit__``), the work runs inside ``async with store:`` too (which must give the store),
with the sweeper started, and leaving it must stop the sweeper. (Leaving
``from_conn_string``'s context alone does not call the store's ``__aexit__``: a sweeper started
there outlives the closed connection; not judged here.)

Workers are threads for a class that serves the sync half, tasks for an async class, released
together by a barrier. A lane whose store no connection string opens (InMemoryStore) or whose
class has no ``from_conn_string`` abstains, naming it.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
from collections.abc import Callable
from typing import Any

import anyio
import anyio.to_thread

from arib.checks._actors import actor_task
from arib.checks.base import Barrier, NotApplicable, TrialContext, describe, race_threads
from arib.checks.langgraph._contract import Problems, guarded
from arib.checks.langgraph._saver import store_call, store_of
from arib.checks.langgraph._store import needs_methods
from arib.ground.model import Trial
from arib.targets.langgraph.lanes import API, is_async
from arib.targets.langgraph.stores import conn_string

STOP_WAIT_S = 2.0
KEYS = ("k0", "k1", "k2")  # each worker: setup(), put and get, per key
# A phase (the setups, the writes) with no end after this long is hung: evidence, not a trial
# past the check's limit (a hung worker thread is abandoned).
PHASE_S = 8.0
# The same for the whole trial (a context's exit, a reopened store's reads).
HANG_S = 20.0
# ARIB-LGSTORE-008's long batch, and when into it another worker calls setup()
LONG_BATCH = 2000
LONG_NS = ("life", "long")
SETUP_DELAY_S = 0.01


async def lifecycle(ctx: TrialContext, racing_setup: bool) -> Trial:
    """One trial: open by string, setup() (raced or not), concurrent writes, leave the
    context, call the store, read back through a fresh instance."""
    problems = Problems()

    async def body() -> Trial:
        try:
            with anyio.fail_after(HANG_S):
                return await _trial(ctx, problems, racing_setup)
        except TimeoutError:
            problems.add("error", f"the trial hung: no end after {HANG_S:g} s (last: "
                                  f"{ctx.ops[-1] if ctx.ops else 'nothing'})")
            return problems.trial(ctx, "released")
        except NotApplicable:
            raise
        except Exception as exc:  # noqa: BLE001 - evidence, after what was seen before it
            if not problems.found:
                raise  # guarded reports it
            problems.add("error", f"then raised {describe(exc)}")
            return problems.trial(ctx, "released")

    return await guarded(ctx, body)


async def _trial(ctx: TrialContext, problems: Problems, racing_setup: bool) -> Trial:
    workers = ctx.params["workers"]
    cls: Any = ctx.target.backend_class()
    needs_methods(cls, "from_conn_string", "setup")
    target = conn_string(ctx.target.name, ctx.target.module, ctx.build)
    sync = not is_async(API.get(ctx.target.name))
    sweeps = not sync and inspect.iscoroutinefunction(getattr(cls, "start_ttl_sweeper", None)) \
        and callable(getattr(cls, "__aexit__", None))
    options = {"ttl": {"sweep_interval_minutes": 5}} if sweeps else {}
    ctx.log(f"{cls.__name__}.from_conn_string(<the trial's store>{', ttl=...' if sweeps else ''})"
            f"; setup() {'by every worker at once' if racing_setup else 'once'}; {workers} "
            f"{'threads' if sync else 'tasks'} put at once"
            f"{' (each setup() first)' if racing_setup else ''}; leave the context; call the "
            f"store; a fresh instance reads back")
    opened = cls.from_conn_string(target, **options)
    if hasattr(opened, "__aenter__"):
        async with opened as store:
            if sweeps:  # the store's own context, whose exit is documented to stop it
                async with store as entered:
                    if entered is not store:
                        problems.add("wrong", f"async with store gave {entered!r:.80}, not "
                                              f"the store")
                    sweeper = await store.start_ttl_sweeper()
                    await _inside(store, sync, workers, racing_setup, problems)
            else:
                sweeper = None
                await _inside(store, sync, workers, racing_setup, problems)
    else:
        with opened as store:
            sweeper = None
            await _inside(store, sync, workers, racing_setup, problems)
    if sweeper is not None:
        with anyio.move_on_after(STOP_WAIT_S):
            while not sweeper.done():
                await anyio.sleep(0.05)
        problems.expect("the TTL sweeper after leaving the context (done)", True, sweeper.done())
    try:
        with anyio.fail_after(STOP_WAIT_S):
            answer = await store_call(store, "get", ("life", "0"), KEYS[0])
        problems.add("wrong", f"after leaving the context, get answered {answer!r:.80} (the "
                              f"connection was not released)")
    except TimeoutError:
        problems.add("wrong", "after leaving the context, get hung instead of refusing")
    except Exception as exc:  # noqa: BLE001 - the refusal expected
        ctx.log(f"after leaving the context, get refused: {describe(exc)}")
    reader = store_of(await ctx.open())
    if racing_setup:
        found = await store_call(reader, "search", LONG_NS, limit=LONG_BATCH + 10)
        if isinstance(found, list) and 0 < len(found) < LONG_BATCH:
            problems.add("partial", f"a fresh instance reads {len(found)} of the {LONG_BATCH} "
                                    f"puts of the batch beside which setup() ran")
        elif isinstance(found, list) and not found and not problems.found:
            problems.add("lost", f"a fresh instance reads none of the {LONG_BATCH} puts of the "
                                 f"batch that returned beside setup()")
    for w in range(workers):
        for key in KEYS:
            got = await store_call(reader, "get", ("life", str(w)), key)
            if getattr(got, "value", None) != {"w": w}:
                problems.add("lost", f"a fresh instance reads ('life', '{w}') {key} as "
                                     f"{got!r:.100}")
    return problems.trial(ctx, "released")


async def _phase(what: str, problems: Problems, racing: Any) -> list[Any] | None:
    """The racing calls' exceptions; None (a problem recorded) when the phase hangs."""
    try:
        with anyio.fail_after(PHASE_S):
            return list(await racing)
    except TimeoutError:
        problems.add("error", f"{what} hung: not every worker was done after {PHASE_S:g} s")
        return None


async def race_tasks(calls: list[Callable[[], Any]]) -> list[BaseException | None]:
    """The async calls as tasks released together; each call's exception. Tasks still running
    when the caller is cancelled are cancelled and abandoned, never awaited (a psycopg
    pipeline a store broke can swallow the cancellation and wait for ever)."""
    barrier = Barrier(len(calls))
    outcome: list[BaseException | None] = [None] * len(calls)

    async def one(i: int) -> None:
        await barrier.wait()
        try:
            await calls[i]()
        except Exception as exc:  # noqa: BLE001 - the store's exception is evidence
            outcome[i] = exc

    tasks = [actor_task(one, i, name=f"task {i}") for i in range(len(calls))]
    try:
        await asyncio.shield(asyncio.gather(*tasks))
    except BaseException:
        for task in tasks:
            task.cancel()
        raise
    return outcome


async def _inside(store: Any, sync: bool, workers: int, racing_setup: bool,
                  problems: Problems) -> None:
    """Inside the context: setup() (by every worker at once, or once), then the writes."""

    def each(make: Any) -> list[Any]:
        return [functools.partial(make, w) for w in range(workers)]

    if sync:
        def setup(w: int) -> None:
            store.setup()

        def write(w: int) -> None:
            for key in KEYS:
                if racing_setup:
                    store.setup()  # a run starting while the others write
                store.put(("life", str(w)), key, {"w": w})
                got = store.get(("life", str(w)), key)
                if getattr(got, "value", None) != {"w": w}:
                    raise AssertionError(f"read back {got!r:.80}")

        setups = await _phase("setup()", problems, race_threads(
            each(setup) if racing_setup else [functools.partial(setup, 0)], abandon=True))
        writes = await _phase("the writes", problems, race_threads(each(write), abandon=True)) \
            if setups is not None and not any(setups) else []
    else:
        async def asetup(w: int) -> None:
            await store.setup()

        async def awrite(w: int) -> None:
            for key in KEYS:
                if racing_setup:
                    await store.setup()  # a run starting while the others write
                await store.aput(("life", str(w)), key, {"w": w})
                got = await store.aget(("life", str(w)), key)
                if getattr(got, "value", None) != {"w": w}:
                    raise AssertionError(f"read back {got!r:.80}")

        setups = await _phase("setup()", problems, race_tasks(
            each(asetup) if racing_setup else [functools.partial(asetup, 0)]))
        writes = await _phase("the writes", problems, race_tasks(each(awrite))) \
            if setups is not None and not any(setups) else []
    for w, exc in enumerate(setups or ()):
        if exc is not None:
            problems.add("error", f"worker {w}'s setup() raised {describe(exc)}")
    for w, exc in enumerate(writes or ()):
        if exc is not None:
            problems.add("error", f"worker {w}'s put and get raised {describe(exc)}")
    if racing_setup and not problems.found:
        await _setup_beside_a_batch(store, sync, problems)


async def _setup_beside_a_batch(store: Any, sync: bool, problems: Problems) -> None:
    """One worker's batch of ``LONG_BATCH`` puts, and ``SETUP_DELAY_S`` into it another
    worker's setup() (a run starting while a long batch is written): both return, and the
    batch is kept whole (read back by ``_trial`` through a fresh instance)."""
    from langgraph.store.base import PutOp

    ops = [PutOp(LONG_NS, f"k{n}", {"n": n}) for n in range(LONG_BATCH)]
    outcome: dict[str, BaseException | None] = {"batch": None, "setup": None}

    async def batch() -> None:
        try:
            await (anyio.to_thread.run_sync(store.batch, ops, abandon_on_cancel=True) if sync
                   else store.abatch(ops))
        except Exception as exc:  # noqa: BLE001 - the store's failure is evidence
            outcome["batch"] = exc

    async def setup() -> None:
        await anyio.sleep(SETUP_DELAY_S)
        try:
            await (anyio.to_thread.run_sync(store.setup, abandon_on_cancel=True) if sync
                   else store.setup())
        except Exception as exc:  # noqa: BLE001
            outcome["setup"] = exc

    try:
        with anyio.fail_after(PHASE_S):
            async with anyio.create_task_group() as tg:
                tg.start_soon(batch)
                tg.start_soon(setup)
    except TimeoutError:
        problems.add("error", f"a batch of {LONG_BATCH} puts and a setup() {SETUP_DELAY_S:g} s "
                              f"into it hung: not done after {PHASE_S:g} s")
        return
    for what, exc in outcome.items():
        if exc is not None:
            problems.add("error", f"a {what} beside the other (a batch of {LONG_BATCH} puts, "
                                  f"setup() {SETUP_DELAY_S:g} s into it) raised {describe(exc)}")


