"""ARIB-LGSTORE-011 (issue 35): a store left while calls are in flight. An application shuts down
(or a job ends) by leaving the store's ``from_conn_string`` context while other threads or
tasks of it are still writing: the process must survive, every call must return or raise
(none waits for ever), every batch that returned must be there whole, and none may be half
there.

The application is a forked process (``arib.checks._forked``), so that a crash of the store is
evidence, not the end of the trial: in it, ``rounds`` times on a fresh store each, the store is
opened by its connection string and set up, ``workers`` threads (a class serving the sync half)
or tasks (an async class) write batches of two puts in a loop, each batch acknowledged to the
parent once it returned, and once ``LEAVE_AFTER`` batches returned the context is left while
they go on; every worker must then end (return or raise) within ``CALL_WAIT_S``. The parent
reads the acknowledgements and how the process ended (a signal is a crash), then a fresh
instance reads every round's store: each acknowledged batch whole, no batch half there.

A lane whose class has no ``from_conn_string`` (InMemoryStore) abstains, naming it.
"""

from __future__ import annotations

import asyncio
import threading
import time
from dataclasses import replace
from typing import Any

import anyio

from arib.checks import _forked
from arib.checks.base import CheckSpec, NotApplicable, Param, Selector, TrialContext, describe
from arib.checks.common import trials_param
from arib.checks.langgraph._contract import Problems, guarded
from arib.checks.langgraph._saver import store_call, store_of
from arib.checks.langgraph._store import needs_methods
from arib.ground.model import Trial
from arib.targets.langgraph.lanes import API, is_async
from arib.targets.langgraph.stores import conn_string

CHECK_ID = "ARIB-LGSTORE-011"
LEAVE_AFTER = 4  # batches returned before the context is left
MAX_BATCHES = 400  # per worker and round: a worker stops here if the store never refuses
CALL_WAIT_S = 1.0  # after leaving: how long the workers' calls may take to return or raise
RUN_WAIT_S = 20.0


def _batch(w: int, i: int) -> list[Any]:
    """Worker ``w``'s ``i``-th batch: two puts in its namespace."""
    from langgraph.store.base import PutOp

    ns = ("inflight", str(w))
    return [PutOp(ns, f"{i}a", {"w": w, "i": i}), PutOp(ns, f"{i}b", {"w": w, "i": i})]


class _Log:
    """What the workers report, from threads or tasks, for the body to forward."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.acked = 0
        self.messages: list[dict[str, Any]] = []

    def add(self, message: dict[str, Any]) -> None:
        with self.lock:
            self.acked += "ack" in message
            self.messages.append(message)

    def take(self) -> list[dict[str, Any]]:
        with self.lock:
            out, self.messages = self.messages, []
            return out


def _body(ctx: TrialContext, workers: int, rounds: int) -> _forked.Body:
    """The application process: ``rounds`` stores, each left with its writers in flight."""
    cls: Any = ctx.target.backend_class()
    sync = not is_async(API.get(ctx.target.name))
    roots = [replace(ctx.build, root=ctx.build.root / f"r{n}") for n in range(rounds)]

    async def body(channel: _forked.Channel) -> None:
        for n, build in enumerate(roots):
            log = _Log()
            build.root.mkdir(parents=True, exist_ok=True)
            target = conn_string(ctx.target.name, ctx.target.module, build)
            ended = await (_round_sync if sync else _round_async)(cls, target, workers, log,
                                                                  channel, n)
            for message in log.take():
                channel.send({**message, "round": n})
            if not ended:
                channel.send({"hung": n})
                return
        channel.send({"done": True})

    return body


async def _forward(log: _Log, channel: _forked.Channel, n: int) -> None:
    for message in log.take():
        channel.send({**message, "round": n})


async def _round_sync(cls: Any, target: str, workers: int, log: _Log,
                      channel: _forked.Channel, n: int) -> bool:
    """One round with threads; whether every worker ended in time after the exit."""
    stop = threading.Event()

    def write(w: int) -> None:
        for i in range(MAX_BATCHES):
            if stop.is_set():
                return
            try:
                store.batch(_batch(w, i))
            except Exception as exc:  # noqa: BLE001 - the refusal after the exit
                log.add({"raised": [w, i], "what": describe(exc)})
                return
            log.add({"ack": [w, i]})

    with cls.from_conn_string(target) as store:
        store.setup()
        threads = [threading.Thread(target=write, args=(w,), daemon=True)
                   for w in range(workers)]
        for thread in threads:
            thread.start()
        while log.acked < LEAVE_AFTER and any(t.is_alive() for t in threads):
            await anyio.sleep(0.001)
        await _forward(log, channel, n)
        channel.send({"leaving": n})
    deadline = time.monotonic() + CALL_WAIT_S
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()))
    stop.set()
    return not any(t.is_alive() for t in threads)


async def _round_async(cls: Any, target: str, workers: int, log: _Log,
                       channel: _forked.Channel, n: int) -> bool:
    """One round with tasks; whether every worker ended in time after the exit."""

    async def write(w: int) -> None:
        for i in range(MAX_BATCHES):
            try:
                await store.abatch(_batch(w, i))
            except Exception as exc:  # noqa: BLE001 - the refusal after the exit
                log.add({"raised": [w, i], "what": describe(exc)})
                return
            log.add({"ack": [w, i]})

    async with cls.from_conn_string(target) as store:
        await store.setup()
        tasks = [asyncio.ensure_future(write(w)) for w in range(workers)]
        while log.acked < LEAVE_AFTER and not all(t.done() for t in tasks):
            await asyncio.sleep(0.001)
        await _forward(log, channel, n)
        channel.send({"leaving": n})
    done, pending = await asyncio.wait(tasks, timeout=CALL_WAIT_S)
    for task in pending:
        task.cancel()  # abandoned, never awaited: a hung call may swallow the cancellation
    return not pending


async def run_trial(ctx: TrialContext) -> Trial:
    """One trial: the application process, then a fresh instance reads every round."""
    problems = Problems()
    return await guarded(ctx, lambda: _trial(ctx, problems))


async def _trial(ctx: TrialContext, problems: Problems) -> Trial:
    cls: Any = ctx.target.backend_class()
    needs_methods(cls, "from_conn_string", "setup")
    workers, rounds = ctx.params["workers"], ctx.params["rounds"]
    if ctx.target.name not in API:
        raise NotApplicable(f"lane {ctx.target.name!r} names no API")
    ctx.log(f"fork the application; in it, {rounds} times on a fresh store: "
            f"{cls.__name__}.from_conn_string, setup(), {workers} "
            f"{'tasks' if is_async(API[ctx.target.name]) else 'threads'} write batches of two "
            f"puts; after {LEAVE_AFTER} returned, leave the context while they go on")
    worker = _forked.fork_worker("application", _body(ctx, workers, rounds))
    acked: list[set[tuple[int, int]]] = [set() for _ in range(rounds)]
    refusals: list[str] = []
    finished = False
    try:
        deadline = time.monotonic() + RUN_WAIT_S
        while (message := await _forked.next_message(worker, deadline)) is not None:
            if "ack" in message:
                acked[message["round"]].add(tuple(message["ack"]))  # type: ignore[arg-type]
            elif "raised" in message:
                refusals.append(f"round {message['round']}: {message['what']}")
            elif "hung" in message:
                problems.add("hung", f"round {message['hung']}: a call in flight when the "
                                     f"context was left neither returned nor raised within "
                                     f"{CALL_WAIT_S:g} s")
            elif "crash" in message or "garbled" in message:
                problems.add("error", f"the application failed: {message}")
            finished = finished or "done" in message
        await _forked.join(worker, time.monotonic() + 2.0)
    finally:
        _forked.reap([worker])
    ended = worker.describe_exit()
    ctx.log(f"the application: {ended}; {sum(map(len, acked))} batches acknowledged; "
            f"refusals after the exit: {refusals[:2]}")
    if ended.startswith("killed by"):
        problems.add("crashed", f"the application's process was {ended} after leaving the "
                                f"store's context with calls in flight (after "
                                f"{sum(map(len, acked))} batches acknowledged)")
    elif not finished and not problems.found:
        problems.add("hung", f"the application did not finish in {RUN_WAIT_S:g} s ({ended})")
    for n in range(rounds):
        await _read_back(ctx, n, acked[n], problems)
    return problems.trial(ctx, "survived")


async def _read_back(ctx: TrialContext, n: int, acked: set[tuple[int, int]],
                     problems: Problems) -> None:
    """A fresh instance on round ``n``'s store: every acknowledged batch whole, none half."""
    root = ctx.build.root / f"r{n}"
    if not root.exists():
        return  # the application never reached this round
    reader = store_of(await ctx.open_with(root=root))
    for w in range(ctx.params["workers"]):
        found = await store_call(reader, "search", ("inflight", str(w)), limit=10 * MAX_BATCHES)
        keys = {item.key for item in found}
        done = {i for i in range(MAX_BATCHES) if {f"{i}a", f"{i}b"} <= keys}
        half = sorted(i for i in range(MAX_BATCHES) if len({f"{i}a", f"{i}b"} & keys) == 1)
        lost = sorted(i for (aw, i) in acked if aw == w and i not in done)
        if lost:
            problems.add("lost", f"round {n}: worker {w}'s acknowledged batches {lost[:5]} are "
                                 f"not there whole")
        if half:
            problems.add("partial", f"round {n}: worker {w}'s batches {half[:5]} are half there")


CHECK = CheckSpec(
    id=CHECK_ID,
    invariant="a store whose from_conn_string context is left while other threads or tasks "
    "write: the process survives, every call returns or raises, every batch that returned is "
    "there whole and none is half there",
    fault="batches of two puts written in a loop by several threads or tasks of a forked "
    "application, its store's context left after the first batches returned, on fresh "
    "stores several times",
    params=(Param("workers", 3, 1, 16, "threads or tasks writing"),
            Param("rounds", 4, 1, 32, "fresh stores left in flight per trial"),
            trials_param(2)),
    run_trial=run_trial,
    mutants=("lg_store_reference_dispose_keeps_the_lock",),
    generated=(Selector("lg-store-reference", "ReferenceStore.dispose", "drop_lock"),),
    timeout_s=45.0,
    reference="lg-store-reference",
)
