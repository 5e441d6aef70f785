"""ARIB-DUR-001: every acknowledged append survives the writer process being killed.

A writer process is forked (before anything is open on the store); it opens its own instance
on the trial's store with the target's builder, then appends the plan's batches one
add_items() at a time and reports each acknowledged append to the parent over a pipe. After
a seeded number of acknowledgements the parent kills it with SIGKILL, mid-stream, reaps it
and drains the acknowledgements the pipe still holds. A fresh instance then reads the store:
every acknowledged batch must be there exactly once and in order, the batch that was in
flight wholly present or wholly absent, and every stored item equal to one that was sent
(nothing torn, half-written or invented).

Only a store that outlives the process can keep this contract. For a backend whose store
lives in process memory (SQLite ':memory:', an in-memory SQLAlchemy URL) the check abstains:
the fresh instance is inspected (or its builder finds the store in the writer's memory) and
the trial raises ``NotApplicable`` naming what it found: the finding is ``not_applicable``.
"""

from __future__ import annotations

import time
from typing import Any

from arib.checks import _forked
from arib.checks.base import (
    CheckSpec,
    NotApplicable,
    Param,
    ParityFault,
    Selector,
    TrialContext,
    describe,
)
from arib.checks.common import canonical, read_items, trials_param
from arib.checks.openai_agents._stores import process_local_store
from arib.ground.model import Counts, Trial

READY_TIMEOUT_S = 20.0
ACK_TIMEOUT_S = 20.0


def _key(item: Any) -> str:
    """Canonical JSON of an item, or a marker for one that is not JSON at all."""
    try:
        return canonical(item)
    except (TypeError, ValueError):
        return f"<not JSON: {type(item).__name__}>"


def _plan(ctx: TrialContext, tag: str, appends: int) -> list[list[dict[str, Any]]]:
    """Seeded batches (mostly single items) with seeded payload sizes, each item unique."""
    plan = []
    for n in range(appends):
        size = ctx.rng.choice((1, 1, 1, 2, 3))
        plan.append([{"role": "user" if i == 0 else "assistant",
                      "content": f"{tag}-{n}.{i} " + "x" * ctx.rng.randint(16, 4096)}
                     for i in range(size)])
    return plan


def _writer_body(ctx: TrialContext, plan: list[list[dict[str, Any]]]) -> _forked.Body:
    """The writer process: open an instance, append each batch, acknowledge each append."""
    target, build = ctx.target, ctx.build

    async def body(channel: _forked.Channel) -> None:
        try:
            handle = await target.build(build)
            await read_items(handle.session)
        except Exception as exc:  # noqa: BLE001 - reported to the parent as evidence
            channel.send({"open_error": describe(exc)})
            return
        channel.send({"ready": True})
        for n, batch in enumerate(plan):
            try:
                await handle.session.add_items(batch)
            except Exception as exc:  # noqa: BLE001
                channel.send({"error": n, "what": describe(exc)})
                break
            channel.send({"ack": n})
        else:
            channel.send({"finished": True})
        # Stay until killed (this process never closes its instance); EOF from the parent
        # (it is gone) ends the wait too.
        await channel.receive(3600)

    return body


async def run_trial(ctx: TrialContext) -> Trial:
    """One trial: a forked writer killed mid-stream; every acknowledged batch must survive."""
    appends = ctx.params["appends"]
    tag = f"{ctx.seed:016x}"
    plan = _plan(ctx, tag, appends)
    kill_after = ctx.rng.randint(1, max(1, appends - 5))
    problems: list[str] = []
    raised = 0  # how many of the problems are the writer's calls that raised
    acks: set[int] = set()
    ctx.log(f"fork a writer process; it opens its own instance on the store and appends "
            f"{appends} batches (sizes {[len(b) for b in plan]}), one add_items() at a time, "
            f"acknowledging each to this process")
    worker = _forked.fork_worker("writer", _writer_body(ctx, plan))
    try:
        message = await _forked.next_message(worker, time.monotonic() + READY_TIMEOUT_S)
        if not message or "ready" not in message:
            problems.append(f"the writer could not open the store: "
                            f"{(message or {}).get('open_error', 'no answer')}")
            raised += bool(message and "open_error" in message)
        deadline = time.monotonic() + ACK_TIMEOUT_S
        while not problems and len(acks) < kill_after:
            message = await _forked.next_message(worker, deadline)
            if message is None:
                problems.append(f"the writer stopped acknowledging after {len(acks)} appends "
                                f"({'exited' if worker.eof else 'hung'})")
            elif "ack" in message:
                acks.add(int(message["ack"]))
            elif "error" in message:
                problems.append(f"append {message['error']} raised {message['what']}")
                raised += 1
            elif "finished" in message:
                break
        ctx.log(f"after {len(acks)} acknowledgements: SIGKILL the writer (mid-stream)")
        _forked.kill(worker)
        for message in _forked.drain_after_exit(worker):
            if "ack" in message:
                acks.add(int(message["ack"]))
            elif "error" in message:
                problems.append(f"append {message['error']} raised {message['what']}")
                raised += 1
    finally:
        _forked.reap([worker])
    acked = sorted(acks)
    in_flight = (max(acked) + 1) if acked else 0
    flight = (f"append {in_flight} may have been in flight" if in_flight < len(plan)
              else "every append was acknowledged before the kill")
    ctx.log(f"writer {worker.describe_exit()}; acknowledged appends: {len(acked)} "
            f"(0..{in_flight - 1}); {flight}")
    ctx.log("fresh instance on the same store: get_items()")
    try:
        probe = await ctx.open()
    except NotApplicable:
        raise  # the store was the writer's own (in its memory): verified by the builder
    except Exception as exc:  # noqa: BLE001 - the store could not be reopened after the kill
        return Trial(ctx.index, ctx.seed, True, Counts(lost=len(acked), raised=1),
                     mode="reopen_failed", sample=f"reopening raised {describe(exc)}",
                     ops=tuple(ctx.ops))
    local = process_local_store(probe.session)
    if local is not None:
        raise NotApplicable(f"ARIB-DUR-001 does not apply to {ctx.target.name!r}: {local}; "
                            f"no store survives its process, so no acknowledged write can")
    try:
        seen = await read_items(probe.session)
    except Exception as exc:  # noqa: BLE001 - a store that cannot be read after the kill
        return Trial(ctx.index, ctx.seed, True, Counts(lost=len(acked), raised=1),
                     mode="read_raised", sample=f"get_items raised {describe(exc)}",
                     ops=tuple(ctx.ops))
    return _judge(ctx, plan, acked, in_flight, seen, problems, raised)


def _judge(ctx: TrialContext, plan: list[list[dict[str, Any]]], acked: list[int],
           in_flight: int, seen: list[Any], problems: list[str], raised: int = 0) -> Trial:
    """The trial from what survived the kill (``raised``: how many ``problems`` are the
    writer's calls that raised; the others, a writer that stopped answering, are wrong
    results)."""
    where = {canonical(item): (n, i) for n, batch in enumerate(plan)
             for i, item in enumerate(batch)}
    found: dict[int, list[int]] = {}
    positions: list[tuple[int, int]] = []
    foreign: list[str] = []
    for item in seen:
        key = _key(item)
        if key in where:
            n, i = where[key]
            found.setdefault(n, []).append(i)
            positions.append((n, i))
        else:
            foreign.append(key[:80])
    lost = duplicated = 0
    notes: list[str] = []
    for n in acked:
        got = found.get(n, [])
        missing = len(plan[n]) - len(set(got))
        lost += missing
        duplicated += len(got) - len(set(got))
        if missing:
            notes.append(f"acknowledged append {n} lost {missing}/{len(plan[n])} items")
    torn = 0
    for n, got in found.items():
        if n in acked:
            continue
        duplicated += len(got) - len(set(got))
        if n > in_flight:
            foreign.append(f"append {n} was never sent before the kill")
        elif len(set(got)) != len(plan[n]):
            torn += 1
            notes.append(f"the in-flight append {n} is half there: {len(set(got))}/"
                         f"{len(plan[n])} items")
    reordered = positions != sorted(positions)
    counts = Counts(lost=lost, duplicated=duplicated, foreign=len(foreign) + torn,
                    wrong_result=len(problems) - raised, raised=raised)
    if problems:
        mode = "writer_error"
    elif lost:
        mode = "acked_lost"
    elif torn or foreign:
        mode = "torn_or_foreign"
    elif duplicated:
        mode = "duplicated"
    elif reordered:
        mode = "reordered"
    else:
        mode = "durable"
    sample = "; ".join([*problems, *notes, *(f"foreign item {f}" for f in foreign)][:3]) or None
    if reordered and not sample:
        sample = "items read back out of the order they were acknowledged in"
    return Trial(ctx.index, ctx.seed, mode != "durable", counts, mode=mode, sample=sample,
                 ops=tuple(ctx.ops))


CHECK = CheckSpec(
    id="ARIB-DUR-001",
    invariant="every append acknowledged before the writer process is killed is there after "
    "reopening, exactly once and in order, and nothing stored is torn or half-written",
    fault="a forked writer process appends batches one add_items() at a time, acknowledging "
    "each over a pipe, and is killed with SIGKILL after a seeded number of acknowledgements; "
    "a fresh instance then reads the store",
    params=(
        Param("appends", 30, 6, 1000, "batches the writer would append if it were not killed"),
        trials_param(3),
    ),
    run_trial=run_trial,
    mutants=(
        "reference_commit_on_close",
        "reference_torn_tail",
        "sqlite_write_behind_buffer",
    ),
    generated=(
        Selector("reference", "ReferenceSession._transact", "drop_commit"),
        Selector("reference", "ReferenceSession.add_items", "early_return"),
        Selector("sqlite-file", "SQLiteSession.add_items", "early_return"),
        Selector("async-sqlite-file", "AsyncSQLiteSession.add_items", "drop_commit"),
        Selector("advanced-sqlite-file", "AdvancedSQLiteSession.add_items", "early_return"),
        Selector("sqlalchemy-sqlite-file", "SQLAlchemySession.add_items", "early_return"),
    ),
    timeout_s=60.0,
    on_disk=True,
    parity=(
        ParityFault(
            "fault_writer_killed", "fault:process",
            "a writer process killed after three acknowledged appends: acknowledged ones "
            "kept",
            "arib.checks.openai_agents.parity.faults:WriterKilled",
        ),
    ),
)
