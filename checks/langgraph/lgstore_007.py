"""ARIB-LGSTORE-007 (issue 35): a store's life through ``from_conn_string``, the way
applications open one: on a fresh database, ``setup()`` called at once by several workers (the
runs of a deployment starting together) succeeds for all of them; their concurrent writes are
all kept, also with each worker calling ``setup()`` again before each of its puts (runs
starting while others write); leaving the context releases the connection (a call on the
store after it raises, never answers from a closed connection); a fresh instance then reads
every write. For a class
whose own context's exit is documented to stop the TTL sweeper (the async stores'
``__aexit__``), the work runs inside ``async with store:`` too, with the sweeper started, and
leaving it must stop the sweeper. (Leaving ``from_conn_string``'s context alone does not call
the store's ``__aexit__``: a sweeper started there outlives the closed connection; not judged
here.)

Workers are threads for a class that serves the sync half (``setup``, ``put`` and ``get`` from
worker threads), tasks for an async class, released together by a barrier. A lane whose store
no connection string opens (InMemoryStore) or whose class has no ``from_conn_string`` abstains,
naming it.
"""

from __future__ import annotations

import functools
import inspect
from typing import Any

import anyio

from checks.base import CheckSpec, Param, Selector, TrialContext, describe, race, race_threads
from checks.common import trials_param
from checks.langgraph._contract import Problems, guarded
from checks.langgraph._saver import store_call, store_of
from checks.langgraph._store import needs_methods
from harness.ground.model import Trial
from targets.langgraph.lanes import API
from targets.langgraph.stores import conn_string

CHECK_ID = "ARIB-LGSTORE-007"
STOP_WAIT_S = 2.0
KEYS = ("k0", "k1", "k2")  # each worker: setup(), put and get, per key


async def run_trial(ctx: TrialContext) -> Trial:
    """One trial: open by string, race setup() and writes, leave, probe, read back fresh."""
    problems = Problems()
    return await guarded(ctx, lambda: _trial(ctx, problems))


async def _trial(ctx: TrialContext, problems: Problems) -> Trial:
    workers = ctx.params["workers"]
    cls: Any = ctx.target.backend_class()
    needs_methods(cls, "from_conn_string", "setup")
    target = conn_string(ctx.target.name, ctx.target.module, ctx.build)
    sync = API.get(ctx.target.name) != "async"
    sweeps = not sync and inspect.iscoroutinefunction(getattr(cls, "start_ttl_sweeper", None)) \
        and callable(getattr(cls, "__aexit__", None))
    options = {"ttl": {"sweep_interval_minutes": 5}} if sweeps else {}
    ctx.log(f"{cls.__name__}.from_conn_string(<the trial's store>{', ttl=...' if sweeps else ''})"
            f"; {workers} {'threads' if sync else 'tasks'} call setup() at once, then put at "
            f"once; leave the context; call the store; a fresh instance reads back")
    opened = cls.from_conn_string(target, **options)
    if hasattr(opened, "__aenter__"):
        async with opened as store:
            if sweeps:  # the store's own context, whose exit is documented to stop it
                async with store as entered:
                    if entered is not store:
                        problems.add("wrong", f"async with store gave {entered!r:.80}, not "
                                              f"the store")
                    sweeper = await store.start_ttl_sweeper()
                    await _inside(ctx, store, sync, workers, problems)
            else:
                sweeper = None
                await _inside(ctx, store, sync, workers, problems)
    else:
        with opened as store:
            sweeper = None
            await _inside(ctx, store, sync, workers, problems)
    if sweeper is not None:
        with anyio.move_on_after(STOP_WAIT_S):
            while not sweeper.done():
                await anyio.sleep(0.05)
        problems.expect("the TTL sweeper after leaving the context (done)", True, sweeper.done())
    try:
        with anyio.fail_after(STOP_WAIT_S):
            answer = await store_call(store, "get", ("life", "0"), "k")
        problems.add("wrong", f"after leaving the context, get answered {answer!r:.80} (the "
                              f"connection was not released)")
    except TimeoutError:
        problems.add("wrong", "after leaving the context, get hung instead of refusing")
    except Exception as exc:  # noqa: BLE001 - the refusal expected
        ctx.log(f"after leaving the context, get refused: {describe(exc)}")
    reader = store_of(await ctx.open())
    for w in range(workers):
        for key in KEYS:
            got = await store_call(reader, "get", ("life", str(w)), key)
            if getattr(got, "value", None) != {"w": w}:
                problems.add("lost", f"a fresh instance reads ('life', '{w}') {key} as "
                                     f"{got!r:.100}")
    return problems.trial(ctx, "released")


async def _inside(ctx: TrialContext, store: Any, sync: bool, workers: int,
                  problems: Problems) -> None:
    """Inside the context: setup() by every worker at once, then a put and a get each."""

    def each(make: Any) -> list[Any]:
        return [functools.partial(make, w) for w in range(workers)]

    if sync:
        def setup(w: int) -> None:
            store.setup()

        def write(w: int) -> None:
            for key in KEYS:
                store.setup()  # a run starting while the others write
                store.put(("life", str(w)), key, {"w": w})
                got = store.get(("life", str(w)), key)
                if getattr(got, "value", None) != {"w": w}:
                    raise AssertionError(f"read back {got!r:.80}")

        setups = await race_threads(each(setup))
        writes = await race_threads(each(write)) if not any(setups) else []
    else:
        async def asetup(w: int) -> None:
            await store.setup()

        async def awrite(w: int) -> None:
            for key in KEYS:
                await store.setup()  # a run starting while the others write
                await store.aput(("life", str(w)), key, {"w": w})
                got = await store.aget(("life", str(w)), key)
                if getattr(got, "value", None) != {"w": w}:
                    raise AssertionError(f"read back {got!r:.80}")

        setups = await race(each(asetup))
        writes = await race(each(awrite)) if not any(setups) else []
    for w, exc in enumerate(setups):
        if exc is not None:
            problems.add("error", f"worker {w}'s setup() raised {describe(exc)}")
    for w, exc in enumerate(writes):
        if exc is not None:
            problems.add("error", f"worker {w}'s put and get raised {describe(exc)}")


CHECK = CheckSpec(
    id=CHECK_ID,
    invariant="a store opened with from_conn_string on a fresh database survives setup() "
    "called at once by several workers and keeps their concurrent writes; leaving the context "
    "releases the connection (calls then refuse) and stops the async stores' TTL sweeper",
    fault="setup() and then put/get released together from several threads or tasks on a "
    "store opened by its connection string; the context left; a call after it",
    params=(Param("workers", 4, 2, 16, "threads or tasks calling setup() and writing"),
            trials_param(6, "trials, each on a fresh database (threads overlap in setup() in "
                            "about 4 of 5)")),
    run_trial=run_trial,
    mutants=("lg_store_reference_context_leaves_open", "lg_async_sqlite_store_exit_keeps_sweeper"),
    # (SqliteStore.setup without its lock is killed by threads that overlap in setup(), in
    # about 4 trials of 5 on an idle machine and fewer under load: a survey kill, not a pair)
    generated=(Selector("lg-store-async-sqlite-file", "AsyncSqliteStore.setup", "drop_lock"),
               Selector("lg-store-async-sqlite-file", "AsyncSqliteStore.__aexit__", "*")),
    timeout_s=30.0,
    reference="lg-store-reference",
)
