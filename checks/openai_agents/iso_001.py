"""ARIB-ISO-001: two session ids on one store never see, take or remove each other's items.

Two instances on the same store, as session ``X`` and as ``X + "-peer"`` (``X`` is a prefix
of the other, so a prefix match is caught too), are first used one after the other (a race
between two instances' first use, such as both switching the file to WAL, is
ARIB-MULTI-001's). Then, one call after the other, X appends, the peer appends two items, X
clears, and the peer pops (it must take its newest item, not answer None because X's clear
removed its session record) and clears (it must empty the peer). Then two rounds run with the
roles swapped. Each round:
1. both sessions append concurrently while a reader on each side reads;
2. the peer appends a marker (now the newest row of the store), then the session pops while the
   peer keeps appending: a pop that ignores the session id takes the peer's marker;
3. the session clears while the peer appends and pops: a clear that ignores the session id
   removes the peer's items.
Every read (during and after each race), every popped item, and the state after each step is
judged: an item of the other session is ``foreign``, an item of this session missing is
``lost``; an operation that raises is an ``error`` (a store shared by two sessions must serve
both). Items are unique per trial, so the judgement is exact whatever the interleaving.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Awaitable, Callable
from typing import Any

import anyio

from arib.checks.base import (
    Barrier,
    CheckSpec,
    Param,
    ParityFault,
    Selector,
    TrialContext,
    describe,
)
from arib.checks.common import canonical, read_items, tally, trials_param
from arib.checks.openai_agents._stores import PEER_SUFFIX, open_peer, require_shared_store
from arib.ground.model import Counts, Trial


@dataclasses.dataclass
class Side:
    """One session of the pair: what it wrote, and what must be visible in it now."""

    name: str
    session: Any
    owned: set[str] = dataclasses.field(default_factory=set)
    expected: list[Any] = dataclasses.field(default_factory=list)
    uncertain: set[str] = dataclasses.field(default_factory=set)
    serial: int = 0

    def new_item(self, tag: str, label: str) -> dict[str, str]:
        """A new item unique to this side, recorded as owned."""
        self.serial += 1
        item = {"role": "user", "content": f"{tag} {self.name} {label} #{self.serial}"}
        self.owned.add(canonical(item))
        return item

    def forget(self, item: Any) -> bool:
        """Remove one item equal to ``item`` from what must be visible; False if absent."""
        key = canonical(item)
        for i, have in enumerate(self.expected):
            if canonical(have) == key:
                del self.expected[i]
                return True
        return False


@dataclasses.dataclass
class Judge:
    """Counts and notes of one trial."""

    tag: str
    lost: int = 0
    duplicated: int = 0
    wrong_result: int = 0  # calls that returned a wrong answer (a pop of None or another item)
    raised: int = 0  # calls that raised
    strays: set[tuple[str, str]] = dataclasses.field(default_factory=set)
    notes: list[str] = dataclasses.field(default_factory=list)
    kinds: Counter[str] = dataclasses.field(default_factory=Counter)

    @property
    def foreign(self) -> int:
        """Distinct items of the other session (or of nobody) each session saw or took."""
        return len(self.strays)

    def note(self, kind: str, text: str) -> None:
        """Count a problem of ``kind``, keeping the text of the first four."""
        self.kinds[kind] += 1
        if len(self.notes) < 4:
            self.notes.append(text)

    def error(self, where: str, exc: BaseException) -> None:
        """Count an operation at ``where`` that raised ``exc``."""
        self.raised += 1
        self.note("op_raised", f"{where} raised {describe(exc)}")

    def judge_seen(self, side: Side, other: Side, seen: list[Any], where: str) -> None:
        """Items in ``side``'s read that belong to ``other`` (or to nobody) are foreign."""
        for item in seen:
            key = canonical(item)
            if key in side.owned or key in side.uncertain or (side.name, key) in self.strays:
                continue
            self.strays.add((side.name, key))
            whose = f"{other.name}'s" if key in other.owned else "an unknown"
            self.note("foreign_read", f"{where}: {side.name} saw {whose} item {key[:80]}")

    async def read(self, side: Side, other: Side, where: str) -> list[Any] | None:
        """``side``'s read, its foreign items judged; None when it raised."""
        try:
            seen = await read_items(side.session)
        except Exception as exc:  # noqa: BLE001 - a read that raises is evidence
            self.error(f"{where}: {side.name}.get_items()", exc)
            return None
        self.judge_seen(side, other, seen, where)
        return seen

    async def verify(self, side: Side, other: Side, where: str) -> None:
        """After a race: ``side`` shows exactly its expected items.

        Each loss is counted once: what is visible becomes what is expected from here on.
        """
        seen = await self.read(side, other, where)
        if seen is None:
            return
        mine = [i for i in seen if canonical(i) in side.owned and canonical(i) not in
                side.uncertain]
        counts = tally(side.expected, mine)
        self.lost += counts.lost
        self.duplicated += counts.duplicated
        if counts.lost:
            self.note("lost", f"{where}: {side.name} lost {counts.lost} of its "
                              f"{len(side.expected)} items")
        if counts.duplicated:
            self.note("duplicated", f"{where}: {side.name} shows {counts.duplicated} items "
                                    f"twice")
        side.expected = mine

    async def pop(self, side: Side, other: Side, where: str) -> None:
        """Pop once on ``side`` and judge the item it returned."""
        try:
            popped = await side.session.pop_item()
        except Exception as exc:  # noqa: BLE001 - a pop that raises is evidence
            self.error(f"{where}: {side.name}.pop_item()", exc)
            return
        if popped is None:
            return
        await self.took(side, other, popped, where)

    async def took(self, side: Side, other: Side, popped: Any, where: str) -> None:
        """Judge an item ``side``'s pop returned: its own (now gone), else foreign."""
        if canonical(popped) in side.owned:
            side.forget(popped)
            return
        self.strays.add((side.name, canonical(popped)))
        whose = f"{other.name}'s" if canonical(popped) in other.owned else "an unknown"
        self.note("foreign_pop", f"{where}: {side.name}.pop_item() took {whose} item "
                                 f"{canonical(popped)[:80]}")

    async def add(self, side: Side, label: str, where: str) -> None:
        """Append one new item on ``side``; if it raises, its presence is left uncertain."""
        item = side.new_item(self.tag, label)
        side.expected.append(item)  # before the await: a racing pop may take it at once
        try:
            await side.session.add_items([item])
        except Exception as exc:  # noqa: BLE001 - a write that raises is evidence
            self.error(f"{where}: {side.name}.add_items()", exc)
            side.forget(item)
            side.uncertain.add(canonical(item))


async def released(calls: list[Callable[[], Awaitable[None]]]) -> None:
    """Run task bodies released together from one barrier."""
    barrier = Barrier(len(calls))

    async def one(call: Callable[[], Awaitable[None]]) -> None:
        await barrier.wait()
        await call()

    async with anyio.create_task_group() as tg:
        for call in calls:
            tg.start_soon(one, call)


def writer(j: Judge, side: Side, count: int, label: str, where: str
           ) -> Callable[[], Awaitable[None]]:
    """A task body: ``count`` single-item appends on ``side``."""
    async def run() -> None:
        for n in range(count):
            await j.add(side, f"{label}{n}", where)
    return run


def reader(j: Judge, side: Side, other: Side, count: int, where: str
           ) -> Callable[[], Awaitable[None]]:
    """A task body: ``count`` reads of ``side``, each judged."""
    async def run() -> None:
        for _ in range(count):
            await j.read(side, other, where)
    return run


def popper(j: Judge, side: Side, other: Side, count: int, where: str
           ) -> Callable[[], Awaitable[None]]:
    """A task body: ``count`` pops on ``side``, each judged."""
    async def run() -> None:
        for _ in range(count):
            await j.pop(side, other, where)
    return run


def clearer(j: Judge, side: Side, where: str) -> Callable[[], Awaitable[None]]:
    """A task body: one clear of ``side``; if it raises, its items are left uncertain."""
    async def run() -> None:
        try:
            await side.session.clear_session()
        except Exception as exc:  # noqa: BLE001 - a clear that raises is evidence
            j.error(f"{where}: {side.name}.clear_session()", exc)
            side.uncertain.update(canonical(i) for i in side.expected)
        side.expected.clear()
    return run


async def one_round(ctx: TrialContext, j: Judge, x: Side, y: Side, r: int) -> None:
    """One round, each race verified: both append; x pops, then clears, while y writes."""
    writers, appends = ctx.params["writers"], ctx.params["appends"]
    pops, reads = ctx.params["pops"], ctx.params["reads"]
    where = f"round {r} writes"
    ctx.log(f"{where}: {x.name} and {y.name}: {writers} writers x {appends} appends each, "
            f"{reads} reads on each side, released together")
    calls = [writer(j, s, appends, f"r{r}w{w}-", where) for s in (x, y) for w in range(writers)]
    calls += [reader(j, s, o, reads, where) for s, o in ((x, y), (y, x))]
    ctx.rng.shuffle(calls)
    await released(calls)
    await j.verify(x, y, where)
    await j.verify(y, x, where)

    where = f"round {r} pops"
    ctx.log(f"{where}: {y.name}.add_items([marker]); then {x.name} pops {pops} while "
            f"{y.name} appends {appends} and {x.name} reads")
    await j.add(y, f"r{r}marker", where)
    calls = [popper(j, x, y, pops, where), writer(j, y, appends, f"r{r}p-", where),
             reader(j, x, y, reads, where)]
    ctx.rng.shuffle(calls)
    await released(calls)
    await j.verify(x, y, where)
    await j.verify(y, x, where)

    where = f"round {r} clear"
    ctx.log(f"{where}: {x.name}.clear_session() while {y.name} appends {appends} and pops "
            f"{pops}, both sides reading")
    calls = [clearer(j, x, where), writer(j, y, appends, f"r{r}c-", where),
             popper(j, y, x, pops, where), reader(j, x, y, reads, where),
             reader(j, y, x, reads, where)]
    ctx.rng.shuffle(calls)
    await released(calls)
    await j.verify(x, y, where)
    await j.verify(y, x, where)


async def clear_then_peer(ctx: TrialContext, j: Judge, x: Side, y: Side) -> None:
    """One after the other: x appends, y appends two, x clears; then y's pop must take y's
    newest item and y's clear must empty y (a clear that drops y's session record makes
    y's pop answer None, and y's clear do nothing, with y's items stored)."""
    where = "clear, then the peer"
    ctx.log(f"{where}: {x.name}.add_items([1 item]); {y.name}.add_items([2 items]); "
            f"{x.name}.clear_session(); {y.name}.get_items(); {y.name}.pop_item()  # its newest; "
            f"{y.name}.clear_session(); both get_items()")
    await j.add(x, "c0-", where)
    await j.add(y, "c1-", where)
    await j.add(y, "c2-", where)
    await clearer(j, x, where)()
    await j.verify(y, x, where)  # a clear that took y's items too is leaky, counted here
    newest = y.expected[-1] if y.expected else None
    try:
        popped = await y.session.pop_item()
    except Exception as exc:  # noqa: BLE001 - a pop that raises is evidence
        j.error(f"{where}: {y.name}.pop_item()", exc)
        popped = newest = None
    if popped is None and newest is not None:
        j.wrong_result += 1
        j.note("peer_pop_none", f"{where}: {y.name}.pop_item() returned None after "
                                f"{x.name}'s clear, with {len(y.expected)} of its items stored")
    elif popped is not None:
        if newest is not None and canonical(popped) != canonical(newest):
            j.wrong_result += 1
            j.note("peer_pop_wrong", f"{where}: {y.name}.pop_item() returned "
                                     f"{canonical(popped)[:60]}, not its newest item")
        await j.took(y, x, popped, where)
    await clearer(j, y, where)()
    await j.verify(x, y, where)
    await j.verify(y, x, where)


async def run_trial(ctx: TrialContext) -> Trial:
    """One trial: a session and a peer id on one store, used in turn, then raced round by round."""
    first = await ctx.open()
    require_shared_store(first, "ARIB-ISO-001", "a second instance, as another session id, on "
                         "the same store")
    peer_id = ctx.build.session_id + PEER_SUFFIX
    ctx.log(f"two instances on one store: A={ctx.build.session_id!r}, B={peer_id!r}")
    peer = await open_peer(ctx, peer_id)
    a, b = Side("A", first.session), Side("B", peer.session)
    j = Judge(f"{ctx.seed:016x}")
    # Both instances open their connections one after the other first: a race between two
    # instances' first use (e.g. both switching the file to WAL) is ARIB-MULTI-001's concern.
    ctx.log("A.get_items(); B.get_items()  # sequential first use")
    await j.read(a, b, "first use")
    await j.read(b, a, "first use")
    await clear_then_peer(ctx, j, a, b)
    await one_round(ctx, j, a, b, 1)
    await one_round(ctx, j, b, a, 2)
    counts = Counts(lost=j.lost, duplicated=j.duplicated, foreign=j.foreign,
                    wrong_result=j.wrong_result, raised=j.raised)
    if counts.total == 0:
        mode = "isolated"
    elif j.foreign or j.lost or j.duplicated:
        mode = "leaky"
    elif j.kinds["peer_pop_none"] or j.kinds["peer_pop_wrong"]:
        mode = "peer_blocked"
    else:
        mode = "op_raised"
    sample = None
    if j.notes:
        kinds = ", ".join(f"{k} x{n}" for k, n in sorted(j.kinds.items()))
        sample = f"{kinds}: " + "; ".join(j.notes)
    return Trial(ctx.index, ctx.seed, counts.total > 0, counts, mode=mode,
                 sample=sample[:400] if sample else None, ops=tuple(ctx.ops))


CHECK = CheckSpec(
    id="ARIB-ISO-001",
    invariant="two session ids on one store never see, take or remove each other's items, "
    "even under concurrent writes, pops and clears: 0 foreign, 0 lost, 0 errors",
    fault="two instances on one store (ids X and X-peer): X clears, then the peer pops and "
    "clears; then two rounds, roles swapped: concurrent appends on both with reads; pops on "
    "one while the other appends after its newest marker; a clear on one while the other "
    "appends and pops",
    params=(
        Param("writers", 2, 1, 16, "concurrent writer tasks per session"),
        Param("appends", 4, 1, 200, "appends per writer task"),
        Param("pops", 2, 1, 50, "pop_item() calls per pop step"),
        Param("reads", 2, 1, 50, "get_items() calls per reader during a race"),
        trials_param(3),
    ),
    run_trial=run_trial,
    mutants=(
        "reference_clear_ignores_session",
        "reference_pop_ignores_session",
        "reference_reads_by_prefix",
        "sqlite_clear_ignores_session",
        "async_sqlite_pop_ignores_session",
        "sqlalchemy_clear_drops_every_session_record",
    ),
    generated=(
        Selector("reference", "ReferenceSession.pop_item*", "widen_session_filter"),
        Selector("reference", "ReferenceSession.clear_session*", "widen_session_filter"),
        Selector("sqlalchemy-sqlite-file", "SQLAlchemySession.get_items", "drop_session_where"),
        Selector("sqlalchemy-sqlite-file", "SQLAlchemySession.*pop_item", "drop_session_where"),
        Selector("sqlalchemy-sqlite-file", "SQLAlchemySession._clear_session",
                 "drop_session_where"),
        Selector("sqlalchemy-sqlite-file", "SQLAlchemySession._clear_session",
                 "flip_comparison"),
    ),
    timeout_s=60.0,
    parity=(
        ParityFault(
            "fault_peer_sessions", "fault:concurrency",
            "two session ids on one store race appends, a pop and a clear: never each "
            "other's",
            "arib.checks.openai_agents.parity.races:PeerSessions",
        ),
    ),
)
