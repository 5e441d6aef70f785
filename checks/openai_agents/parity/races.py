"""Fault steps with concurrent callers: writers, batches, clears, pops, limit reads, peers.

The calls of each step are released together from one barrier; on a thread- or server-backed
backend they truly overlap, so the interleaving differs from run to run. Every record is
therefore a class the invariant fixes whatever the interleaving (a sorted multiset, a
per-writer projection, a yes/no of a consistency rule, sorted outcome classes), never the
interleaving itself: two correct lanes record the same, and a lane that loses, duplicates,
tears, reorders within a writer or raises records something else. The start order of the tasks
comes from the step's ``seed``.
"""

from __future__ import annotations

import random
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, ClassVar

import anyio
import anyio.lowlevel

from arib.checks import _forked
from arib.checks.base import Barrier
from arib.checks.openai_agents.parity.faults import FORK_TIMEOUT_S, _store, forked_writer
from arib.checks.openai_agents.parity.steps import StepSpec, WorkflowContext
from arib.checks.parity.faultkit import bounded, key, multiset, projection, read


def _item(tag: str) -> dict[str, Any]:
    return {"role": "user", "content": tag}


async def _together(calls: Sequence[Callable[[], Awaitable[None]]], seed: int) -> None:
    """Start ``calls`` as tasks in an order drawn from ``seed``; one barrier releases them."""
    barrier = Barrier(len(calls))
    order = list(range(len(calls)))
    random.Random(seed).shuffle(order)

    async def one(i: int) -> None:
        await barrier.wait()
        await calls[i]()

    async with anyio.create_task_group() as tg:
        for i in order:
            tg.start_soon(one, i)


def _plan(writers: int, batches: int, size: int, tag: str = "w") -> list[list[list[Any]]]:
    """Per writer, its batches of ``size`` distinct items, in the order it adds them."""
    return [
        [[_item(f"{tag}{w} b{b} i{i}") for i in range(size)] for b in range(batches)]
        for w in range(writers)
    ]


def _in_order(seen: Sequence[Any], mine: Sequence[Sequence[list[Any]]]) -> list[bool]:
    """Per writer: are its items in ``seen``, each once and in the order it added them?"""
    return [projection(seen, [i for b in m for i in b]) for m in mine]


def _after(
    ctx: WorkflowContext,
    seen: list[Any] | None,
    how: str,
    errors: list[str],
    fields: Callable[[list[Any]], dict[str, Any]],
) -> None:
    """Record the final state's classes (or how the final read failed) and the errors."""
    body = {"read": how} if seen is None else fields(seen)
    ctx.record("after", [{**body, "errors": sorted(errors)}])


def _writer(
    session: Any, batches: Sequence[list[Any]], errors: list[str]
) -> Callable[[], Awaitable[None]]:
    async def write() -> None:
        for batch in batches:
            _, how = await bounded(partial(session.add_items, list(batch)))
            if how != "returned":
                errors.append(how)

    return write


def _contiguous(seen: Sequence[Any], batch: Sequence[Any]) -> str:
    """``whole`` when ``batch`` appears once as a contiguous run, ``absent``, else ``torn``."""
    keys = [key(i) for i in seen]
    wanted = [key(i) for i in batch]
    hits = sum(keys.count(k) for k in wanted)
    if hits == 0:
        return "absent"
    for start in range(len(keys) - len(wanted) + 1):
        if keys[start : start + len(wanted)] == wanted:
            return "whole" if hits == len(wanted) else "torn"
    return "torn"


@dataclass(frozen=True)
class ConcurrentBatches(StepSpec):
    """ARIB-ORDER-001's fault: ``writers`` tasks add ``batches`` multi-item batches, together.

    Compared: the sorted multiset of the final items, each batch's class (``whole`` =
    contiguous and in its order), whether each writer's batches are in its order, and the
    sorted outcome classes of failed calls. The order between writers is the race's.
    """

    writers: int = 3
    batches: int = 2
    size: int = 3
    seed: int = 2
    kind: ClassVar[str] = "concurrent_batches"

    async def run(self, ctx: WorkflowContext) -> None:
        """Release the writers together and record the final items' classes."""
        mine = _plan(self.writers, self.batches, self.size)
        errors: list[str] = []
        await _together([_writer(ctx.session, m, errors) for m in mine], self.seed)
        seen, how = await read(ctx.session)
        _after(
            ctx,
            seen,
            how,
            errors,
            lambda seen: {
                "items": multiset(seen),
                "batches": [[_contiguous(seen, b) for b in m] for m in mine],
                "each_writer_in_order": _in_order(seen, mine),
            },
        )


@dataclass(frozen=True)
class ConcurrentAppends(ConcurrentBatches):
    """ARIB-CONC-001's fault: ``writers`` tasks append ``batches`` single items each, together.

    The same record as ``ConcurrentBatches`` with one-item batches: every item once (sorted
    multiset), each writer's items in its own order, failed calls; not the interleaving.
    """

    writers: int = 4
    batches: int = 3
    size: int = 1
    seed: int = 1
    kind: ClassVar[str] = "concurrent_appends"


@dataclass(frozen=True)
class ClearRacesWriters(StepSpec):
    """ARIB-CLEAR-001's fault: ``clear_session()`` racing writers of multi-item batches.

    A few seed items are stored; then ``writers`` tasks add ``batches`` batches each while one
    task clears after ``clear_after`` scheduler checkpoints, all released together. How many
    batches survive is the race's; what every serial order of the calls guarantees is
    compared: no seed item survives, every batch is whole or absent, each writer's surviving
    batches are a suffix of its batches (a batch that ended before the clear began cannot
    survive it while a later one is gone), nothing foreign, and the sorted outcome classes of
    failed calls.
    """

    seeds: int = 2
    writers: int = 2
    batches: int = 3
    size: int = 2
    clear_after: int = 2
    seed: int = 3
    kind: ClassVar[str] = "clear_races_writers"

    async def run(self, ctx: WorkflowContext) -> None:
        """Race a clear against the writers and record what survived."""
        session = ctx.session
        seeded = [_item(f"seed {i}") for i in range(self.seeds)]
        await session.add_items(list(seeded))
        mine = _plan(self.writers, self.batches, self.size)
        errors: list[str] = []
        calls = [_writer(session, m, errors) for m in mine]
        await _together([*calls, _clear(session, errors, self.clear_after)], self.seed)
        seen, how = await read(session)
        known = {key(i) for i in seeded} | {key(i) for m in mine for b in m for i in b}

        def classes(seen: list[Any]) -> dict[str, Any]:
            states = [[_contiguous(seen, b) for b in m] for m in mine]
            return {
                "seed_items_gone": not {key(i) for i in seeded} & {key(i) for i in seen},
                "every_batch_whole_or_absent": all(
                    state in ("whole", "absent") for row in states for state in row
                ),
                "survivors_are_a_suffix": [
                    row == sorted(row, key=lambda state: state != "absent") for row in states
                ],
                "foreign": sum(1 for i in seen if key(i) not in known),
            }

        _after(ctx, seen, how, errors, classes)


@dataclass(frozen=True)
class ConcurrentPops(StepSpec):
    """ARIB-POP-001's fault: ``pops`` pop_item() calls released together, twice.

    ``items`` items are stored with one add_items(); round 1 has fewer items to take than
    pops would, round 2 more pops than items left. Whatever order the pops run in, a correct
    store hands out the newest items once each: compared per round are the popped items as a
    sorted multiset, how many pops got None, what remains (in order), and failed calls.
    """

    items: int = 5
    pops: int = 3
    kind: ClassVar[str] = "concurrent_pops"

    async def run(self, ctx: WorkflowContext) -> None:
        """Release the pops together in two rounds and record each round."""
        session = ctx.session
        await session.add_items([_item(f"pop {i}") for i in range(self.items)])
        for round_ in (1, 2):
            got: list[Any] = []
            errors: list[str] = []

            async def pop(out: list[Any] = got, errs: list[str] = errors) -> None:
                value, how = await bounded(session.pop_item)
                if how != "returned":
                    errs.append(how)
                else:
                    out.append(value)

            await _together([pop] * self.pops, round_)
            rest, how = await read(session)
            ctx.record(
                f"round{round_}",
                [
                    {
                        "popped": multiset(v for v in got if v is not None),
                        "none": sum(1 for v in got if v is None),
                        "remaining": rest if rest is not None else how,
                        "errors": sorted(errors),
                    }
                ],
            )


def _window_ok(window: Sequence[Any], final: Sequence[Any], limit: int) -> bool:
    """A read of ``limit`` taken while appends ran: the newest items of some prefix of final."""
    if not window:
        return True
    keys = [key(i) for i in final]
    newest = key(window[-1])
    if newest not in keys:
        return False
    end = keys.index(newest) + 1
    return [key(i) for i in window] == keys[max(0, end - limit) : end]


@dataclass(frozen=True)
class LimitReadsRaceAppends(StepSpec):
    """ARIB-LIMIT-001's fault: ``get_items(limit=k)`` readers racing single-item writers.

    Compared: whether every window read during the race is the newest k items of some prefix
    of the final history (which prefix is the race's), the final items as a sorted multiset,
    each writer's order, whether ``get_items(limit=k) == F[-k:]`` afterwards for k in 1, 3,
    len(F) and len(F) + 3, and failed calls.
    """

    writers: int = 2
    appends: int = 4
    readers: int = 2
    limits: tuple[int, ...] = (1, 2, 3)
    seed: int = 4
    kind: ClassVar[str] = "limit_reads_race_appends"

    async def run(self, ctx: WorkflowContext) -> None:
        """Race limited readers against writers and record the windows' consistency."""
        session = ctx.session
        mine = _plan(self.writers, self.appends, 1)
        errors: list[str] = []
        windows: list[tuple[int, list[Any]]] = []

        async def reader() -> None:
            for k in self.limits:
                value, how = await bounded(partial(session.get_items, limit=k))
                if how != "returned":
                    errors.append(how)
                else:
                    windows.append((k, list(value)))

        calls = [_writer(session, m, errors) for m in mine] + [reader] * self.readers
        await _together(calls, self.seed)
        final, how = await read(session)
        after = []
        for k in (1, 3, len(final or ()), len(final or ()) + 3):
            value, got = await bounded(partial(session.get_items, limit=k))
            after.append(final is not None and got == "returned" and list(value) == final[-k:])
        _after(
            ctx,
            final,
            how,
            errors,
            lambda final: {
                "windows_consistent": all(_window_ok(w, final, k) for k, w in windows),
                "items": multiset(final),
                "each_writer_in_order": _in_order(final, mine),
                "limit_reads_after": after,
            },
        )


@dataclass(frozen=True)
class PeerSessions(StepSpec):
    """ARIB-ISO-001's fault: two session ids on one store, racing appends, a pop and a clear.

    The workflow's session ``X`` and ``X-peer`` (a prefix of each other) on one store: both
    append together, then X pops while the peer appends, then X clears while the peer
    appends. Compared: what X
    popped (its own newest item, whatever the peer did), X's items after the clear, the
    peer's items as a sorted multiset, whether any read of either showed the other's items,
    and failed calls. Abstains for a store that a second instance cannot open.
    """

    appends: int = 2
    seed: int = 5
    kind: ClassVar[str] = "peer_sessions"

    async def run(self, ctx: WorkflowContext) -> None:
        """Race appends, a pop and a clear on two session ids and record each side."""
        store = _store(ctx)
        x = ctx.session
        peer = (await store.peer(store.handle, f"{store.session_id}-peer")).session
        errors: list[str] = []
        mine = [[_item(f"x {i}")] for i in range(self.appends)]
        theirs = [[_item(f"peer {i}")] for i in range(self.appends)]
        await _together([_writer(x, mine, errors), _writer(peer, theirs, errors)], self.seed)
        popped: list[Any] = []

        async def pop() -> None:
            value, how = await bounded(x.pop_item)
            popped.append(value if how == "returned" else how)

        await _together([pop, _writer(peer, [[_item("peer late")]], errors)], self.seed + 1)
        await _together(
            [_writer(peer, [[_item("peer last")]], errors), _clear(x, errors)], self.seed + 2
        )
        x_items, x_how = await read(x)
        peer_items, peer_how = await read(peer)
        foreign = _shows(x_items, "peer") or _shows(peer_items, "x ")
        ctx.record(
            "after",
            [
                {
                    "x_popped": popped,
                    "x_after_clear": x_items if x_items is not None else x_how,
                    "peer_items": multiset(peer_items) if peer_items is not None else peer_how,
                    "foreign_seen": foreign,
                    "errors": sorted(errors),
                }
            ],
        )


def _shows(items: list[Any] | None, prefix: str) -> bool:
    """Whether any item's content starts with ``prefix`` (the other session's items)."""
    return any(
        str(i.get("content", "")).startswith(prefix) for i in items or [] if isinstance(i, dict)
    )


def _clear(session: Any, errors: list[str], after: int = 0) -> Callable[[], Awaitable[None]]:
    """A clear_session() call, after ``after`` scheduler checkpoints; failures to ``errors``."""

    async def clear() -> None:
        for _ in range(after):
            await anyio.lowlevel.checkpoint()
        _, how = await bounded(session.clear_session)
        if how != "returned":
            errors.append(how)

    return clear


@dataclass(frozen=True)
class InstancesOnOneStore(StepSpec):
    """ARIB-MULTI-001's fault: several instances and a second process appending to one store.

    A forked process opens its own instance on a fresh store (forked before anything is open
    on it), this process opens ``instances`` more; all append ``appends`` single items each,
    released at one instant of the monotonic clock. A fresh instance then reads. Compared: the
    final items as a sorted multiset, each writer's order, and the sorted outcome classes of
    failed calls (a "database is locked" reaching a caller is one). Abstains for a store in
    process memory.
    """

    instances: int = 2
    appends: int = 3
    seed: int = 6
    kind: ClassVar[str] = "instances_on_one_store"

    async def run(self, ctx: WorkflowContext) -> None:
        """Append from several instances and a forked process at once and record the store."""
        store = _store(ctx)
        await store.reopen()  # abstains for a store in process memory
        build = store.fork_context()
        theirs = _plan(1, self.appends, 1, tag="process ")[0]
        body = forked_writer(store.target, build, theirs, wait_go=True)
        worker = _forked.fork_worker("parity-appender", body)
        errors: list[str] = []
        mine = _plan(self.instances, self.appends, 1, tag="instance ")
        try:
            message = await _forked.next_message(worker, time.monotonic() + FORK_TIMEOUT_S)
            if not message or "ready" not in message:
                errors.append(f"process_open_{(message or {}).get('open', 'no_answer')}")
            first = await store.open_built(build)
            handles = [first] + [await store.reopen(first) for _ in range(self.instances - 1)]
            for h in handles:
                await h.session.get_items()
            start = time.monotonic() + 0.05
            _forked.send_go([worker], start)
            await _forked.sleep_until(start)
            writers = [_writer(h.session, m, errors) for h, m in zip(handles, mine, strict=True)]
            await _together(writers, self.seed)
            errors.extend(await _process_failures(worker))
        finally:
            _forked.reap([worker])
        seen, how = await read((await store.open_built(build)).session)
        _after(
            ctx,
            seen,
            how,
            errors,
            lambda seen: {
                "items": multiset(seen),
                "each_writer_in_order": _in_order(seen, [*mine, theirs]),
            },
        )


async def _process_failures(worker: _forked.Worker) -> list[str]:
    """The outcome classes of the forked writer's failed appends, once it reports done."""
    deadline = time.monotonic() + FORK_TIMEOUT_S
    while True:
        message = await _forked.next_message(worker, deadline)
        if message is None:
            return ["process_gone"]
        if "done" in message:
            return [str(f) for f in message["done"]]
