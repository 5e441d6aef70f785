"""ARIB-LGRUN-001: a state read that is slow inside its call, while the run writes to the thread
and the thread is deleted, shows the thread as it was at one instant, and every call returns.

Applications read a thread's state while its runs go on: a UI polls ``get_state`` and pages
through ``get_state_history`` (its consumer working between items) while the graph puts pending
writes, and a user deletes the conversation meanwhile; parallel branches of one run read and
write one saver at once. A saver that lets a write or a delete land inside a read in progress
gives a checkpoint without the writes it had, a history that is half before and half after, or
makes the other call fail on a transaction the read left open.

Each trial runs in a forked process on a store of its own (the lane's builder). For the read
``get`` (the latest checkpoint of a thread) and ``list`` (the thread's history), a dry run
counts the points the read can be held at; then, at up to ``points`` of them in a seeded order,
each on a fresh thread holding three checkpoints with a task's writes each:

1. the read starts and is held at its k-th point (``arib.checks.langgraph._held``): its k-th
   suspension on a saver serving the async half, its k-th deserialization (a slow serializer)
   in a worker thread otherwise;
2. released meanwhile: late writes to the thread's newest checkpoint then to its oldest (a
   saver keeping only the latest: to it alone), and beside them ``delete_thread`` of the thread
   (where the class offers it); they run until they return, or for a short settle time (a
   saver that serializes them with the read keeps them waiting);
3. the read is released, and every call must return, none raising;
4. what the read showed must be the thread at one instant within it
   (``arib.checks.langgraph._snapshot``): no checkpoint without writes it had (``torn``), no history
   that shows a later call but not an earlier one (``not_a_snapshot``), nothing lost or
   foreign.

Modes: ``snapshot`` per point (held); ``torn``, ``not_a_snapshot``, ``lost``, ``foreign``,
``raised``, ``hung``, ``crashed`` (violated). A call in flight longer than the bound
(``arib.checks._bounds.hang_bound``) is ``hung``.
"""

from __future__ import annotations

import asyncio
import faulthandler
import functools
import itertools
import random
import threading
from dataclasses import dataclass
from typing import Any

import anyio

from arib.checks import _forked
from arib.checks._bounds import hang_bound
from arib.checks._suspend import held_at
from arib.checks.base import (
    CheckSpec,
    NotApplicable,
    Param,
    Selector,
    TrialContext,
    describe,
)
from arib.checks.common import trials_param
from arib.checks.langgraph._faults import Op, writer_plan
from arib.checks.langgraph._held import SETTLE_S, HeldSerde
from arib.checks.langgraph._saver import config, offers
from arib.checks.langgraph._served import Calls, Raised, forked_report
from arib.checks.langgraph._snapshot import Stamp, look, verdict
from arib.ground.model import Counts, Trial
from arib.targets.base import BuildContext, TargetSpec
from arib.targets.langgraph.lanes import KIND, api_of, is_async, latest_only

CHECK_ID = "ARIB-LGRUN-001"
PRE_STEPS = 3  # checkpoints (each with a task's writes) on a thread before its read
HELD = ("snapshot", "not_reached")


@dataclass(frozen=True)
class Setting:
    """What the forked trial needs (the fork copies it)."""

    target: TargetSpec
    build: BuildContext
    seed: int
    points: int
    bound_s: float


@dataclass
class Point:
    """One held read: its thread, the ops before it, the late calls, what it expects."""

    read: str  # "get" or "list"
    k: int
    thread: str
    pre: list[Op]
    late: dict[str, Op]
    delete: bool
    expect: list[str]


def _point(saver: Any, s: Setting, read: str, k: int, n: int, delete: bool) -> Point:
    keep_all = not latest_only(saver)
    thread = f"t{s.seed:x}-{read}-{k}"
    pre = writer_plan(saver, s.seed, n, thread, PRE_STEPS, history=keep_all)
    puts = [op for op in pre if op.kind == "put"]
    targets = {"late_newest": puts[-1]}
    if keep_all:
        targets["late_oldest"] = puts[0]
    late = {name: Op("writes", thread, put.checkpoint_id, task_id=f"{name}-{s.seed:x}-{n}",
                     writes=tuple((f"ch{i}", f"{name}-{n}-{i}") for i in range(2)))
            for name, put in targets.items()}
    expect = [p.checkpoint_id for p in puts] if read == "list" and keep_all else \
        [puts[-1].checkpoint_id]
    return Point(read, k, thread, pre, late, delete, expect)


def _shown(tuples: list[Any]) -> dict[str, tuple[dict[str, Any], set[tuple[str, str, Any]]]]:
    return {item.checkpoint["id"]: (dict(item.checkpoint.get("channel_values", {})),
                                    {tuple(w) for w in (item.pending_writes or [])})
            for item in tuples if item is not None}


async def _read_async(saver: Any, read: str, thread: str) -> list[Any]:
    if read == "get":
        return [await saver.aget_tuple(config(thread))]
    return [item async for item in saver.alist(config(thread))]


def _read_sync(saver: Any, read: str, thread: str) -> list[Any]:
    if read == "get":
        return [saver.get_tuple(config(thread))]
    return list(saver.list(config(thread)))


class Run:
    """One point run: the read held at k, the late calls released meanwhile, all stamped."""

    def __init__(self, saver: Any, calls: Calls, point: Point) -> None:
        self.saver, self.calls, self.p = saver, calls, point
        self.clock = itertools.count()
        self.stamps: dict[str, Stamp] = {}
        self.count = 0

    def _writes_sync(self) -> None:
        for name, op in self.p.late.items():
            begin = next(self.clock)
            self.calls.run_sync(f"{name}: {op.label}", functools.partial(op.run_sync,
                                                                         self.saver))
            self.stamps[name] = (begin, next(self.clock))

    def _delete_sync(self) -> None:
        begin = next(self.clock)
        self.calls.run_sync(f"delete_thread {self.p.thread}",
                            lambda: self.saver.delete_thread(self.p.thread))
        self.stamps["delete"] = (begin, next(self.clock))

    async def _writes_async(self) -> None:
        for name, op in self.p.late.items():
            begin = next(self.clock)
            await self.calls.run(f"{name}: {op.label}", functools.partial(op.run, self.saver))
            self.stamps[name] = (begin, next(self.clock))

    async def _delete_async(self) -> None:
        begin = next(self.clock)
        await self.calls.run(f"adelete_thread {self.p.thread}",
                             lambda: self.saver.adelete_thread(self.p.thread))
        self.stamps["delete"] = (begin, next(self.clock))

    async def _late_async(self) -> None:
        """The late writes (one after the other) and the delete, released together."""
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._writes_async)
            if self.p.delete:
                tg.start_soon(self._delete_async)

    async def held_async(self) -> list[Any] | None:
        """The read held at its k-th suspension (k = 0: not held, no late calls)."""
        reached, release = asyncio.Event(), asyncio.Event()
        seen = [0]

        async def hold() -> None:
            reached.set()
            await release.wait()

        async def reader() -> list[Any]:
            begin = next(self.clock)
            got = await self.calls.run(
                f"{'aget_tuple' if self.p.read == 'get' else 'alist'} {self.p.thread} "
                f"(held at suspension {self.p.k})",
                lambda: held_at(_read_async(self.saver, self.p.read, self.p.thread), self.p.k,
                                hold, seen))
            self.stamps["read"] = (begin, next(self.clock))
            return got  # type: ignore[no-any-return]

        read = asyncio.ensure_future(reader())
        waiting = asyncio.ensure_future(reached.wait())
        await asyncio.wait({read, waiting}, return_when=asyncio.FIRST_COMPLETED)
        waiting.cancel()
        late = asyncio.ensure_future(self._late_async()) if reached.is_set() else None
        if late is not None:
            await asyncio.wait({late}, timeout=SETTLE_S)
        release.set()
        outcome = await asyncio.gather(read, *([late] if late else []), return_exceptions=True)
        self.count = seen[0]
        for failed in outcome:
            if isinstance(failed, BaseException):
                raise failed if isinstance(failed, Raised) else Raised(describe(failed))
        return outcome[0] if reached.is_set() else None  # type: ignore[return-value]

    async def held_sync(self, gate: HeldSerde) -> list[Any] | None:
        """The read (in a worker thread) held at its k-th deserialization."""
        got: list[Any] = []
        failure: list[BaseException] = []
        late_done, finished = threading.Event(), threading.Event()

        def reader() -> None:
            gate.arm(self.p.k)
            begin = next(self.clock)
            try:
                got.extend(self.calls.run_sync(
                    f"{'get_tuple' if self.p.read == 'get' else 'list'} {self.p.thread} (held "
                    f"at deserialization {self.p.k})",
                    lambda: _read_sync(self.saver, self.p.read, self.p.thread)))
            except Raised as exc:
                failure.append(exc)
            finally:
                self.stamps["read"] = (begin, next(self.clock))
                self.count = gate.disarm()
                finished.set()
                gate.reached.set()  # a read that ended before its k-th point: nothing held

        actors = [self._writes_sync, *([self._delete_sync] if self.p.delete else [])]
        left = [len(actors)]
        lock = threading.Lock()

        def late(actor: Any) -> None:
            try:
                actor()
            except Raised as exc:
                failure.append(exc)
            finally:
                with lock:
                    left[0] -= 1
                    if not left[0]:
                        late_done.set()

        async with anyio.create_task_group() as tg:
            tg.start_soon(functools.partial(anyio.to_thread.run_sync, reader,
                                            abandon_on_cancel=True))
            await anyio.to_thread.run_sync(gate.reached.wait, abandon_on_cancel=True)
            held = bool(self.p.k) and not finished.is_set()
            if held:
                for actor in actors:
                    tg.start_soon(functools.partial(anyio.to_thread.run_sync, late, actor,
                                                    abandon_on_cancel=True))
                await anyio.to_thread.run_sync(late_done.wait, SETTLE_S,
                                               abandon_on_cancel=True)
            gate.release.set()
        if failure:
            raise failure[0]
        return got if held else None


async def _serve(s: Setting, saver: Any, calls: Calls) -> dict[str, Any]:
    """Every point of both reads; their modes and the first problems."""
    rng = random.Random(s.seed)
    gate: HeldSerde | None = None
    if not is_async(api_of(saver)):  # the sync half, in worker threads: held in the serializer
        gate = HeldSerde(saver.serde, s.bound_s)
        saver.serde = gate
    delete = offers(saver, "delete_thread")
    modes: dict[str, int] = {}
    notes: list[str] = []
    n = 0

    async def run_point(read: str, k: int) -> tuple[str, int]:
        nonlocal n
        n += 1
        point = _point(saver, s, read, k, n, delete)
        for op in point.pre:
            await calls.run(op.label, functools.partial(op.run, saver))
        run = Run(saver, calls, point)
        got = await (run.held_sync(gate) if gate is not None else run.held_async())
        if got is None:
            return "not_reached", run.count
        mode, why = verdict(look(_shown(got), point.pre, point.late, delete, point.expect),
                            run.stamps, run.stamps["read"])
        if why:
            notes.append(f"{read} held at point {k}: {why}")
        return mode, run.count

    try:
        for read in ("get", "list"):
            _, count = await run_point(read, 0)
            ks = list(range(1, min(count, s.points) + 1))
            rng.shuffle(ks)
            for k in ks:
                mode, _ = await run_point(read, k)
                modes[f"{read}:{mode}"] = modes.get(f"{read}:{mode}", 0) + 1
    except Raised:
        return {"modes": {"raised": 1}, "notes": calls.errors[:3], "raised": len(calls.errors)}
    return {"modes": modes, "notes": notes[:3], "raised": 0}


def _body(s: Setting) -> _forked.Body:
    async def body(channel: _forked.Channel) -> None:
        faulthandler.disable()  # a crash here is evidence (its signal), not a dump
        calls = Calls(channel)
        try:
            handle = await s.target.build(s.build)
        except Exception as exc:  # noqa: BLE001 - reported as evidence
            channel.send({"open_error": describe(exc)})
            return
        channel.send({"report": await _serve(s, handle.session, calls)})

    return body


def _bad(modes: dict[str, int]) -> list[str]:
    return sorted(mode for mode in modes if mode.split(":")[-1] not in HELD)


async def run_trial(ctx: TrialContext) -> Trial:
    """One trial: both reads held at seeded points while late writes and a delete land."""
    if KIND.get(ctx.target.name) == "store":
        raise NotApplicable(f"{ctx.target.name!r} is a store lane ({ctx.target.backend}), not "
                            f"a checkpointer")
    root = ctx.build.root / "run"
    root.mkdir()
    bound = hang_bound(ctx)
    s = Setting(ctx.target, BuildContext(root, ctx.build.session_id, ctx.build.services),
                ctx.seed, ctx.params["points"], bound)
    ctx.log(f"in a forked process, on a store of its own: for get (latest) and list, count the "
            f"points a read can be held at, then at up to {s.points} of them (seeded order), "
            f"each on a fresh thread of {PRE_STEPS} checkpoints with writes: hold the read "
            f"there, release late writes to the newest and the oldest checkpoint, then "
            f"delete_thread, for up to {SETTLE_S} s; release the read; each call must return "
            f"within {bound:.1f} s; the read must show the thread at one instant")
    r = await forked_report(ctx, "held-reads", _body(s), bound)
    if isinstance(r, Trial):
        return r
    modes: dict[str, int] = r["modes"]
    bad = _bad(modes)
    ctx.log("modes: " + ", ".join(f"{m}={c}" for m, c in sorted(modes.items())))
    mode = bad[0] if bad else "+".join(sorted(modes)) or "nothing_held"
    return Trial(ctx.index, ctx.seed, bool(bad),
                 Counts(raised=r["raised"], foreign=sum(modes[m] for m in bad)), mode=mode,
                 sample="; ".join(r["notes"])[:300] or None, ops=tuple(ctx.ops))


CHECK = CheckSpec(
    id=CHECK_ID,
    invariant="a read of a thread held inside its call while late writes and delete_thread "
    "land on that thread shows the thread as it was at one instant, and every call returns "
    "without raising",
    fault="get and list held at their k-th suspension (async half) or deserialization (sync "
    "half, a slow serializer) while late writes to the newest and oldest checkpoint and a "
    "delete_thread of the thread are released, for every k up to points",
    params=(
        Param("points", 6, 1, 64, "at most this many hold points per read"),
        trials_param(2, "independent trials (seeded order of the points)"),
    ),
    run_trial=run_trial,
    mutants=("lg_reference_reads_without_snapshot", "lg_async_sqlite_list_writes_per_item"),
    generated=(
        Selector("lg-reference", "ReferenceSaver.get_tuple", "drop_lock"),
        Selector("lg-reference", "ReferenceSaver.list", "drop_lock"),
        Selector("lg-async-sqlite-file", "AsyncSqliteSaver.alist", "drop_lock"),
        Selector("lg-async-sqlite-memory", "AsyncSqliteSaver.aget_tuple", "drop_lock"),
        Selector("lg-async-sqlite-memory", "AsyncSqliteSaver.adelete_thread", "drop_lock"),
    ),
    timeout_s=60.0,
    hang_invariant=True,
)
