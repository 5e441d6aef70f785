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

from checks import _forked
from checks.base import Barrier
from harness.parity.faultkit import bounded, key, multiset, outcome, projection, read
from harness.parity.faults import FORK_TIMEOUT_S, _store
from harness.parity.workflows import StepSpec, WorkflowContext


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


def _writer(
    session: Any, batches: Sequence[list[Any]], errors: list[str]
) -> Callable[[], Awaitable[None]]:
    async def write() -> None:
        for batch in batches:
            _, how = await bounded(partial(session.add_items, list(batch)))
            if how != "returned":
                errors.append(how)

    return write


@dataclass(frozen=True)
class ConcurrentAppends(StepSpec):
    """ARIB-CONC-001's fault: ``writers`` tasks append ``appends`` single items each, together.

    Compared: the final items as a sorted multiset (every item once, none foreign), whether
    each writer's items are in its own order, and the sorted outcome classes of failed calls.
    Not compared: how the writers interleave, which the race decides.
    """

    writers: int = 4
    appends: int = 3
    seed: int = 1
    kind: ClassVar[str] = "concurrent_appends"

    async def run(self, ctx: WorkflowContext) -> None:
        session = ctx.session
        plan = [[_item(f"w{w} a{i}")] for w in range(self.writers) for i in range(self.appends)]
        mine = [plan[w * self.appends : (w + 1) * self.appends] for w in range(self.writers)]
        errors: list[str] = []
        await _together([_writer(session, m, errors) for m in mine], self.seed)
        seen, how = await read(session)
        ctx.record(
            "after",
            [
                {
                    "items": multiset(seen) if seen is not None else how,
                    "each_writer_in_order": [
                        seen is not None and projection(seen, [i for b in m for i in b])
                        for m in mine
                    ],
                    "errors": sorted(errors),
                }
            ],
        )


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
        session = ctx.session
        mine = [
            [[_item(f"w{w} b{b} i{i}") for i in range(self.size)] for b in range(self.batches)]
            for w in range(self.writers)
        ]
        errors: list[str] = []
        await _together([_writer(session, m, errors) for m in mine], self.seed)
        seen, how = await read(session)
        if seen is None:
            ctx.record("after", [{"read": how, "errors": sorted(errors)}])
            return
        ctx.record(
            "after",
            [
                {
                    "items": multiset(seen),
                    "batches": [[_contiguous(seen, b) for b in m] for m in mine],
                    "each_writer_in_order": [
                        projection(seen, [i for b in m for i in b]) for m in mine
                    ],
                    "errors": sorted(errors),
                }
            ],
        )


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
        session = ctx.session
        seeded = [_item(f"seed {i}") for i in range(self.seeds)]
        await session.add_items(list(seeded))
        mine = [
            [[_item(f"w{w} b{b} i{i}") for i in range(self.size)] for b in range(self.batches)]
            for w in range(self.writers)
        ]
        errors: list[str] = []

        async def clear() -> None:
            for _ in range(self.clear_after):
                await anyio.lowlevel.checkpoint()
            _, how = await bounded(session.clear_session)
            if how != "returned":
                errors.append(how)

        calls = [_writer(session, m, errors) for m in mine]
        await _together([*calls, clear], self.seed)
        seen, how = await read(session)
        if seen is None:
            ctx.record("after", [{"read": how, "errors": sorted(errors)}])
            return
        known = {key(i) for i in seeded} | {key(i) for m in mine for b in m for i in b}
        states = [[_contiguous(seen, b) for b in m] for m in mine]
        ctx.record(
            "after",
            [
                {
                    "seed_items_gone": not any(key(i) in {key(s) for s in seen} for i in seeded),
                    "every_batch_whole_or_absent": all(
                        s in ("whole", "absent") for row in states for s in row
                    ),
                    "survivors_are_a_suffix": [
                        row == sorted(row, key=lambda s: s != "absent") for row in states
                    ],
                    "foreign": sum(1 for i in seen if key(i) not in known),
                    "errors": sorted(errors),
                }
            ],
        )


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
        session = ctx.session
        mine = [
            [[_item(f"w{w} a{i}")] for i in range(self.appends)] for w in range(self.writers)
        ]
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
        if final is None:
            ctx.record("after", [{"read": how, "errors": sorted(errors)}])
            return
        after = []
        for k in (1, 3, len(final), len(final) + 3):
            value, got = await bounded(partial(session.get_items, limit=k))
            after.append(got == "returned" and list(value) == final[-k:])
        ctx.record(
            "after",
            [
                {
                    "windows_consistent": all(_window_ok(w, final, k) for k, w in windows),
                    "items": multiset(final),
                    "each_writer_in_order": [
                        projection(final, [i for b in m for i in b]) for m in mine
                    ],
                    "limit_reads_after": after,
                    "errors": sorted(errors),
                }
            ],
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


def _clear(session: Any, errors: list[str]) -> Callable[[], Awaitable[None]]:
    async def clear() -> None:
        _, how = await bounded(session.clear_session)
        if how != "returned":
            errors.append(how)

    return clear


def _appender(target: Any, build: Any, batches: list[list[Any]]) -> _forked.Body:
    async def body(channel: _forked.Channel) -> None:
        try:
            handle = await target.build(build)
            await handle.session.get_items()
        except Exception as exc:  # noqa: BLE001 - reported to the parent as evidence
            channel.send({"open": outcome(exc)})
            return
        channel.send({"ready": True})
        if not await channel.wait_go(FORK_TIMEOUT_S):
            return
        failed = []
        for batch in batches:
            _, how = await bounded(partial(handle.session.add_items, list(batch)))
            if how != "returned":
                failed.append(how)
        channel.send({"done": failed})
        await channel.receive(FORK_TIMEOUT_S)

    return body


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
        store = _store(ctx)
        await store.reopen()  # abstains for a store in process memory
        build = store.fork_context()
        theirs = [[_item(f"process a{i}")] for i in range(self.appends)]
        worker = _forked.fork_worker("parity-appender", _appender(store.target, build, theirs))
        errors: list[str] = []
        mine = [
            [[_item(f"instance {n} a{i}")] for i in range(self.appends)]
            for n in range(self.instances)
        ]
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
            done = await _forked.next_message(worker, time.monotonic() + FORK_TIMEOUT_S)
            errors.extend(done.get("done", ["process_no_answer"]) if done else ["process_gone"])
        finally:
            _forked.reap([worker])
        seen, how = await read((await store.open_built(build)).session)
        ctx.record(
            "after",
            [
                {
                    "items": multiset(seen) if seen is not None else how,
                    "each_writer_in_order": [
                        seen is not None and projection(seen, [i for b in m for i in b])
                        for m in [*mine, theirs]
                    ],
                    "errors": sorted(errors),
                }
            ],
        )
