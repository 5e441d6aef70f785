"""ARIB-MULTI-001: appends through several instances and processes on one store are all kept.

Each trial forks ``processes`` worker processes (before anything is open on the store), then
creates the store through one instance and closes it, so the fault is the concurrent appends,
not a race to create tables. Each worker then opens ``instances`` instances of the backend on
the same store and session id (the target's own builder, the trial's BuildContext) on its own
event loop; the trial's process opens ``instances`` more. When every instance is open and has
read once, all writers are released together at one instant of the monotonic clock (which
every process shares): the workers by a go message naming it, the local writers by a barrier.
Each writer appends ``appends`` single-item batches. A fresh instance then reads the store:
every append must be there exactly once, and no append may have raised (a "database is
locked" that reaches the caller is the classic failure of a store shared between processes).

A store no second instance can open (``SQLiteSession(":memory:")``), or one in process memory
when worker processes are asked for, makes the check abstain, with the reason read on the
setup instance; with ``processes=0`` an in-memory store shared by instances is measured.
"""

from __future__ import annotations

import time
from typing import Any

import anyio

from arib.checks import _forked
from arib.checks.base import (
    Barrier,
    CheckSpec,
    NotApplicable,
    Param,
    ParityFault,
    Selector,
    TrialContext,
    describe,
)
from arib.checks.common import first_differences, read_items, tally, trials_param
from arib.checks.openai_agents._stores import (
    process_local_store,
    require_cross_process_store,
    require_shared_store,
)
from arib.ground.model import Counts, Trial
from arib.targets.base import Handle

CHECK_ID = "ARIB-MULTI-001"
READY_TIMEOUT_S = 20.0
DONE_TIMEOUT_S = 30.0
START_DELAY_S = 0.02  # every process starts writing at one instant, this far after the go
LOCK_WORDS = ("locked", "busy", "deadlock", "could not obtain lock", "lock timeout")


def _is_lock_error(text: str) -> bool:
    return any(word in text.lower() for word in LOCK_WORDS)


def _plan(tag: str, writer: str, appends: int) -> list[dict[str, Any]]:
    return [{"role": "user", "content": f"{tag}-{writer}-{n}"} for n in range(appends)]


async def _append_all(session: Any, writer: str, items: list[dict[str, Any]], barrier: Barrier,
                      errors: list[str]) -> int:
    """One writer: wait for the release, then append its items one by one; count the acks."""
    await barrier.wait()
    acked = 0
    for item in items:
        try:
            await session.add_items([item])
            acked += 1
        except Exception as exc:  # noqa: BLE001 - a writer error is evidence
            errors.append(f"{writer}: add_items raised {describe(exc)}")
    return acked


def _worker_body(ctx: TrialContext, process: int, plans: dict[str, list[dict[str, Any]]]
                 ) -> _forked.Body:
    """What a forked worker runs: open its instances, report ready, append on go, report."""
    target, build = ctx.target, ctx.build

    async def body(channel: _forked.Channel) -> None:
        handles: list[Handle] = []
        try:
            if await channel.receive(READY_TIMEOUT_S) != "open":
                channel.send({"open_error": f"w{process}: no open signal from the parent"})
                return
            try:
                for _ in plans:
                    handles.append(await target.build(build))
                for handle in handles:
                    await read_items(handle.session)
            except Exception as exc:  # noqa: BLE001 - opening the shared store failed
                channel.send({"open_error": f"w{process}: {describe(exc)}"})
                return
            channel.send({"ready": process})
            if not await channel.wait_go(READY_TIMEOUT_S + DONE_TIMEOUT_S):
                channel.send({"open_error": f"w{process}: no go signal from the parent"})
                return
            errors: list[str] = []
            barrier = Barrier(len(plans))
            acked: dict[str, int] = {}

            async def run(writer: str, session: Any) -> None:
                acked[writer] = await _append_all(session, writer, plans[writer], barrier,
                                                  errors)

            async with anyio.create_task_group() as tg:
                for writer, handle in zip(plans, handles, strict=True):
                    tg.start_soon(run, writer, handle.session)
            channel.send({"done": process, "acked": acked, "errors": errors[:20],
                          "error_count": len(errors)})
        finally:
            for handle in handles:
                with anyio.CancelScope(shield=True):
                    await handle.dispose()

    return body


async def run_trial(ctx: TrialContext) -> Trial:
    """One trial: instances in several processes append together; every append is read once.

    Long (over 80 lines) on purpose: the trial is one scenario read top to bottom, and its
    concurrent tasks are closures over the trial's state; split up, that state would be
    threaded through every helper.
    """
    instances, processes = ctx.params["instances"], ctx.params["processes"]
    appends = ctx.params["appends"]
    tag = f"{ctx.seed:016x}"
    local = {f"m.i{i}": _plan(tag, f"m.i{i}", appends) for i in range(instances)}
    remote = {p: {f"w{p}.i{i}": _plan(tag, f"w{p}.i{i}", appends) for i in range(instances)}
              for p in range(1, processes + 1)}
    expected = [item for plan in (local, *remote.values()) for items in plan.values()
                for item in items]
    errors: list[str] = []
    hung: list[str] = []

    workers: list[_forked.Worker] = []
    try:
        # Fork first: nothing may be open on the store in this process when a worker forks.
        ctx.log(f"fork {processes} worker processes")
        for p in range(1, processes + 1):
            inherited = [fd for w in workers for fd in (w.read_fd, w.go_fd)]
            workers.append(_forked.fork_worker(f"w{p}", _worker_body(ctx, p, remote[p]),
                                               inherited))
        ctx.log("create the store: open one instance, get_items(), close it")
        try:
            setup = await ctx.target.build(ctx.build)
            keep = process_local_store(setup.session) is not None  # it holds the store
            if keep:
                ctx._handles.append(setup)  # disposed with the trial
            try:
                require_shared_store(setup, CHECK_ID, "several instances on one store")
                if processes:
                    require_cross_process_store(setup.session, CHECK_ID,
                                                "worker processes on the same store")
                await read_items(setup.session)
            finally:
                if not keep:
                    await setup.dispose()
        except NotApplicable:
            raise  # verified on the object: the workers are reaped below
        except Exception as exc:  # noqa: BLE001
            return Trial(ctx.index, ctx.seed, True, Counts(raised=1), mode="setup_failed",
                         sample=f"creating the store raised {describe(exc)}",
                         ops=tuple(ctx.ops))
        ctx.log(f"each worker opens {instances} instances on the same store and session id "
                f"and reads once")
        _forked.tell(workers, "open")
        ctx.log(f"this process opens {instances} instances on the same store and reads once")
        handles: list[Handle] = []
        try:
            for _ in local:
                handles.append(await ctx.open())
            for handle in handles:
                await read_items(handle.session)
        except Exception as exc:  # noqa: BLE001
            errors.append(f"m: opening an instance raised {describe(exc)}")
        deadline = time.monotonic() + READY_TIMEOUT_S
        ready: list[_forked.Worker] = []
        for worker in workers:
            message = await _forked.next_message(worker, deadline)
            if message and "ready" in message:
                ready.append(worker)
            elif message and "open_error" in message:
                errors.append(f"{message['open_error']} (opening)")
            else:
                hung.append(f"{worker.name} never became ready ({message or 'no message'})")
        order = list(local)
        ctx.rng.shuffle(order)
        local_ok = len(handles) == len(local)
        writers = len(local) * local_ok + instances * len(ready)
        ctx.log(f"release {writers} writers together, at one instant of the shared monotonic "
                f"clock ({len(ready)} workers and this process; local start order {order}); "
                f"each appends {appends} items, one add_items() at a time")
        start = time.monotonic() + START_DELAY_S
        _forked.send_go(ready, start)
        await _forked.sleep_until(start)
        if local_ok:
            barrier = Barrier(len(local))
            sessions = dict(zip(local, (h.session for h in handles), strict=True))
            async with anyio.create_task_group() as tg:
                for writer in order:
                    tg.start_soon(_append_all, sessions[writer], writer, local[writer],
                                  barrier, errors)
        deadline = time.monotonic() + DONE_TIMEOUT_S
        for worker in ready:
            message = await _forked.next_message(worker, deadline)
            if message and "done" in message:
                errors.extend(message["errors"])
                errors.extend(["(more)"] * (message["error_count"] - len(message["errors"])))
                ctx.log(f"{worker.name} done: acked {dict(sorted(message['acked'].items()))}")
            elif message and "crash" in message:
                hung.append(f"{worker.name} crashed: {message['crash']}")
            else:
                hung.append(f"{worker.name} did not finish within {DONE_TIMEOUT_S:.0f}s")
        for worker in workers:
            if not await _forked.join(worker, time.monotonic() + 5.0):
                _forked.kill(worker)
    finally:
        _forked.reap(workers)

    ctx.log("fresh instance on the same store: get_items()")
    try:
        probe = await ctx.open()
        seen = await read_items(probe.session)
    except Exception as exc:  # noqa: BLE001 - a read that raises shows nothing written
        return Trial(ctx.index, ctx.seed, True,
                     Counts(lost=len(expected), raised=len(errors) + 1), mode="read_raised",
                     sample=f"get_items raised {describe(exc)}", ops=tuple(ctx.ops))
    try:
        counts = tally(expected, seen, raised=len(errors) + len(hung))
    except (TypeError, ValueError) as exc:  # items that are not JSON at all
        return Trial(ctx.index, ctx.seed, True,
                     Counts(lost=len(expected), wrong_result=1, raised=len(errors)),
                     mode="unreadable_items",
                     sample=f"get_items returned items that are not JSON: {describe(exc)}",
                     ops=tuple(ctx.ops))
    locked = [e for e in errors if _is_lock_error(e)]
    if locked:
        mode = "lock_error_escaped"
    elif hung:
        mode = "worker_hung"
    elif errors:
        mode = "writer_error"
    elif counts.total:
        mode = "lossy"
    else:
        mode = "exact"
    sample = "; ".join([*locked[:2], *hung[:1], *errors[:1]][:2]) or first_differences(
        expected, seen) or None
    return Trial(ctx.index, ctx.seed, counts.total > 0, counts, mode=mode, sample=sample,
                 ops=tuple(ctx.ops))


CHECK = CheckSpec(
    id=CHECK_ID,
    invariant="appends through several instances, in one process and in several, on one store "
    "and session id are all kept: none lost or duplicated, and no lock error reaches the caller",
    fault="instances x (processes + 1) writers, each on its own instance of the same store and "
    "session id (forked worker processes with their own event loops, plus this process), "
    "released together, each appending single-item batches",
    params=(
        Param("instances", 3, 1, 16, "instances per process on the same store and session id"),
        Param("processes", 2, 0, 8, "forked worker processes, besides the trial's own"),
        Param("appends", 10, 1, 500, "single-item add_items() calls per instance"),
        trials_param(3),
    ),
    run_trial=run_trial,
    mutants=(
        "reference_instance_local_sequence",
        "reference_txn_across_await_no_wait",
        "sqlite_instance_local_ids",
        "async_sqlite_no_busy_timeout",
    ),
    generated=(
        Selector("reference", "ReferenceSession.add_items", "early_return"),
        Selector("reference", "ReferenceSession.add_items", "drop_await"),
        Selector("sqlite-file", "SQLiteSession.add_items", "drop_await"),
        Selector("async-sqlite-file", "AsyncSQLiteSession.add_items", "early_return"),
    ),
    timeout_s=60.0,
    parity=(
        ParityFault(
            "fault_instances_on_one_store", "fault:process",
            "two instances and a second process append at one instant: every item kept",
            "arib.checks.openai_agents.parity.races:InstancesOnOneStore",
        ),
    ),
)
