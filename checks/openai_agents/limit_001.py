"""ARIB-LIMIT-001: get_items(limit=k) is the newest k items, in order, even under appends.

``writers`` tasks each append ``appends`` single items one after another while ``readers``
tasks each take ``reads`` windows ``get_items(limit=k)`` (k seeded, 1..``limit``), all
released together from one barrier; every call is stamped with a logical clock when it is
invoked and when it returns. Afterwards, where the store admits a second instance, a peer
session (id ``X-peer``) on the same store appends its own items, so the newest rows of the
store are not this session's; then a full read ``F = get_items()`` is taken, and
``get_items(limit=k)`` for k in 1, ``limit``, ``len(F) - 1``, ``len(F)``, ``len(F) + 3`` and
the edge values 0 and -1, on both sessions.

Invariant, made precise (the store is append-only here, so every state it passes through is
a prefix ``F[:j]`` of the final history):

- ``F`` holds every appended item exactly once, and no call raised;
- after the writers: ``get_items(limit=k) == F[-k:]`` (all of ``F`` when k > len(F)), and
  never an item of the peer session; the same for the peer's reads of its own items;
- ``get_items(limit=0)`` is empty; ``get_items(limit=-1)`` is all of ``F`` (SQLite's
  ``LIMIT -1``) or is refused by an exception that names the limit (a dialect that rejects a
  negative LIMIT), and the session reads correctly after that refusal;
- while they run, each window ``w`` of a read with limit k is suffix-consistent: there is a
  prefix length ``j`` with ``w == F[j - len(w):j]`` and ``len(w) == min(k, j)`` (``j`` is
  fixed by the window's newest item, or 0 for an empty window);
- that ``j`` respects real time: ``F[:j]`` holds every item whose append returned before
  the read was invoked, and none whose append was invoked after the read returned;
- reads never go back in time: a read that was invoked after another read returned has a
  ``j`` at least as large.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
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
from arib.checks.common import (
    canonical,
    first_differences,
    judged_trial,
    label,
    read_items,
    tally,
    trials_param,
)
from arib.checks.openai_agents._stores import PEER_SUFFIX, open_peer
from arib.ground.model import Counts, Trial
from arib.targets.base import Handle


@dataclass(frozen=True)
class Stamp:
    """A call's logical invocation and return times."""

    invoked: int
    returned: int


@dataclass(frozen=True)
class Window:
    """One read ``get_items(limit=k)`` taken while the writers ran."""

    reader: int
    k: int
    items: tuple[Any, ...]
    when: Stamp


@dataclass(frozen=True)
class LimitJudgement:
    """The verdict on one trial: counts, a mode naming the first defect, and a sample."""

    counts: Counts
    mode: str
    sample: str | None

    @property
    def violated(self) -> bool:
        """Whether any read broke the invariant."""
        return self.mode != "consistent"


def _any_of(seen: Sequence[Any], owned: Sequence[Any]) -> bool:
    """True when ``seen`` holds any of ``owned`` (e.g. a peer session's items)."""
    keys = {canonical(i) for i in owned}
    return any(canonical(i) in keys for i in seen)


def window_problem(window: Window, history: Sequence[Any], appended: dict[str, Stamp]
                   ) -> tuple[int, str | None]:
    """The prefix length a window shows, and why it is not a valid window (or None)."""
    index = {canonical(item): i for i, item in enumerate(history)}
    keys = [canonical(item) for item in window.items]
    shown = [label(i) for i in window.items][:4]
    if not keys:
        j = 0
    elif keys[-1] not in index:
        return 0, f"limit={window.k} read returned an item not in the history: {shown}"
    else:
        j = index[keys[-1]] + 1
    if len(keys) != min(window.k, j):
        return j, (f"limit={window.k} read returned {len(keys)} items ending at history "
                   f"position {j}; expected {min(window.k, j)}: {shown}")
    if keys != [canonical(item) for item in history[j - len(keys):j]]:
        return j, (f"limit={window.k} read is not the newest {len(keys)} of the first {j} "
                   f"items: {shown}")
    for pos, item in enumerate(history):
        stamp = appended.get(canonical(item))
        if stamp is None:
            continue
        if pos >= j and stamp.returned < window.when.invoked:
            return j, (f"limit={window.k} read (t={window.when.invoked}) misses "
                       f"{label(item)}, whose append returned at t={stamp.returned}")
        if pos < j and stamp.invoked > window.when.returned:
            return j, (f"limit={window.k} read (returned t={window.when.returned}) shows "
                       f"{label(item)}, whose append began later at t={stamp.invoked}")
    return j, None


@dataclass(frozen=True)
class Edge:
    """A read ``get_items(limit=k)`` at an edge value (k <= 0): what it gave or raised."""

    k: int
    items: tuple[Any, ...] | None
    raised: str | None = None


def edge_problem(edge: Edge, history: Sequence[Any], who: str = "") -> str | None:
    """Why an edge read is wrong, or None: k = 0 gives nothing; k < 0 gives all of
    ``history`` or is refused by an exception that names the limit."""
    call = f"{who}get_items(limit={edge.k})"
    if edge.raised is not None:
        if edge.k < 0 and "limit" in edge.raised.lower():
            return None
        return f"{call} raised {edge.raised}"
    got = [canonical(i) for i in edge.items or ()]
    want = [canonical(i) for i in history] if edge.k < 0 else []
    if got != want:
        return (f"{call} returned {len(got)} items {[label(i) for i in edge.items or ()][:3]}; "
                f"expected {len(want)} ({'the whole history' if edge.k < 0 else 'none'})")
    return None


def final_problem(k: int, got: Sequence[Any], history: Sequence[Any], who: str = ""
                  ) -> str | None:
    """Why a read ``get_items(limit=k)`` (k >= 1) after the writers is not ``history[-k:]``."""
    want = list(history[-k:])
    if [canonical(i) for i in got] == [canonical(i) for i in want]:
        return None
    return (f"after the writers, {who}get_items(limit={k}) returned "
            f"{[label(i) for i in got][:4]} ({len(got)} items); expected the newest "
            f"{len(want)}, ending {[label(i) for i in want][-2:]}")


def judge_limit(history: Sequence[Any], expected: Sequence[Any], appended: dict[str, Stamp],
                windows: Sequence[Window], finals: Sequence[tuple[int, Sequence[Any]]],
                errors: Sequence[str] = (), *, edges: Sequence[Edge] = (),
                peer: Sequence[Any] = (), peer_reads: Sequence[Edge] = ()) -> LimitJudgement:
    """Judge a trial's reads against the full history (see the module docstring).

    ``peer`` is what the peer session appended (its whole history), ``peer_reads`` its reads:
    each an ``Edge`` (any k; k >= 1 must give the peer's newest k).
    """
    counts = tally(expected, history, raised=len(errors))
    if errors:
        return LimitJudgement(counts, "call_raised", "; ".join(errors[:2]))
    if counts.total:
        mode = "peer_items_read" if counts.foreign and _any_of(history, peer) else "lossy"
        return LimitJudgement(counts, mode, first_differences(expected, history))
    for k, got in finals:
        problem = final_problem(k, got, history)
        if problem:
            mode = "peer_items_read" if _any_of(got, peer) else "wrong_window"
            return LimitJudgement(counts, mode, problem)
    prefix: list[tuple[Window, int]] = []
    for window in windows:
        j, problem = window_problem(window, history, appended)
        if problem:
            return LimitJudgement(counts, "torn_window", f"reader {window.reader}: {problem}")
        prefix.append((window, j))
    for early, j_early in prefix:
        for late, j_late in prefix:
            if early.when.returned < late.when.invoked and j_late < j_early:
                return LimitJudgement(counts, "went_back",
                                      f"reader {late.reader}'s read (t={late.when.invoked}) "
                                      f"shows {j_late} items, fewer than the {j_early} of a "
                                      f"read that returned at t={early.when.returned}")
    for edge in edges:
        problem = edge_problem(edge, history)
        if problem:
            return LimitJudgement(counts, "wrong_edge", problem)
    for read in peer_reads:
        problem = (edge_problem(read, peer, "the peer's ") if read.k <= 0 or read.items is None
                   else final_problem(read.k, read.items, peer, "the peer's "))
        if problem:
            mode = "peer_window_wrong" if read.k > 0 else "wrong_edge"
            return LimitJudgement(counts, mode, problem)
    return LimitJudgement(counts, "consistent", None)


async def run_trial(ctx: TrialContext) -> Trial:
    """One trial: limit reads race appends, then every limit edge is read beside a peer.

    Long (over 80 lines) on purpose: the trial is one scenario read top to bottom, and its
    concurrent tasks are closures over the trial's state; split up, that state would be
    threaded through every helper.
    """
    writers, appends = ctx.params["writers"], ctx.params["appends"]
    readers, reads, limit = ctx.params["readers"], ctx.params["reads"], ctx.params["limit"]
    handle = await ctx.open()
    session = handle.session
    tag = f"{ctx.seed:016x}"
    plan = {w: [{"role": "user", "content": f"{tag}-w{w}-{i}"} for i in range(appends)]
            for w in range(writers)}
    ks = {r: [ctx.rng.randint(1, limit) for _ in range(reads)] for r in range(readers)}
    tasks = [f"writer {w}" for w in range(writers)] + [f"reader {r}" for r in range(readers)]
    ctx.rng.shuffle(tasks)
    ctx.log(f"{writers} writers x {appends} single-item add_items() and {readers} readers x "
            f"get_items(limit=k) with k {list(ks.values())} released together, start order "
            f"{tasks}")
    clock = itertools.count()
    appended: dict[str, Stamp] = {}
    windows: list[Window] = []
    errors: list[str] = []
    barrier = Barrier(len(tasks))

    async def writer(w: int) -> None:
        await barrier.wait()
        for item in plan[w]:
            invoked = next(clock)
            try:
                await session.add_items([item])
            except Exception as exc:  # noqa: BLE001 - a write that raises is evidence
                errors.append(f"add_items({label(item)}) raised {describe(exc)}")
            appended[canonical(item)] = Stamp(invoked, next(clock))

    async def reader(r: int) -> None:
        await barrier.wait()
        for k in ks[r]:
            invoked = next(clock)
            try:
                got = await read_items(session, k)
            except Exception as exc:  # noqa: BLE001 - a read that raises is evidence
                errors.append(f"reader {r}: get_items(limit={k}) raised {describe(exc)}")
                continue
            windows.append(Window(r, k, tuple(got), Stamp(invoked, next(clock))))

    async with anyio.create_task_group() as tg:
        for task in tasks:
            kind, number = task.split()
            tg.start_soon(writer if kind == "writer" else reader, int(number))
    for window in sorted(windows, key=lambda w: w.when.invoked):
        ctx.log(f"  reader {window.reader}: get_items(limit={window.k}) invoked "
                f"t={window.when.invoked}, returned t={window.when.returned}: "
                f"{len(window.items)} items")
    expected = [item for w in range(writers) for item in plan[w]]
    try:
        peer, peer_items = await _peer_appends(ctx, handle, tag)
    except Exception as exc:  # noqa: BLE001 - a peer that cannot write is evidence
        peer, peer_items = None, []
        errors.append(f"the peer session's add_items raised {describe(exc)}")
    ctx.log("get_items(); then get_items(limit=k) for k in 1, limit, len - 1, len, len + 3; "
            "then k = 0 and k = -1")
    try:
        history = await read_items(session)
        finals = []
        for k in dict.fromkeys((1, limit, len(history) - 1, len(history), len(history) + 3)):
            if k > 0:
                finals.append((k, await read_items(session, k)))
        edges = [await edge_read(session, k) for k in EDGE_KS]
        ctx.log("get_items() again, after the edge reads")
        again = await read_items(session)
        if [canonical(i) for i in again] != [canonical(i) for i in history]:
            errors.append(f"after the edge reads get_items() returned {len(again)} items, "
                          f"not the {len(history)} it returned before them")
        peer_reads = []
        if peer is not None:
            ctx.log(f"the peer: get_items(limit=k) for k in 1, {len(peer_items)}, "
                    f"{len(peer_items) + 2}, 0 and -1")
            for k in (1, len(peer_items), len(peer_items) + 2, *EDGE_KS):
                peer_reads.append(await edge_read(peer.session, k))
    except Exception as exc:  # noqa: BLE001 - a read that raises shows nothing
        return Trial(ctx.index, ctx.seed, True,
                     Counts(lost=len(expected), raised=len(errors) + 1), mode="read_raised",
                     sample=f"final read raised {describe(exc)}", ops=tuple(ctx.ops))
    return judged_trial(
        ctx, lambda: judge_limit(history, expected, appended, windows, finals, errors,
                                 edges=edges, peer=peer_items, peer_reads=peer_reads))


EDGE_KS = (0, -1)
PEER_APPENDS = 3


async def edge_read(session: Any, k: int) -> Edge:
    """``get_items(limit=k)``; a refusal (an exception) is recorded, not raised."""
    try:
        return Edge(k, tuple(await read_items(session, k)))
    except Exception as exc:  # noqa: BLE001 - a refusal is judged by edge_problem
        return Edge(k, None, describe(exc))


async def _peer_appends(ctx: TrialContext, handle: Handle, tag: str
                        ) -> tuple[Handle | None, list[Any]]:
    """A peer session on the same store appends its items (now the store's newest rows); no
    peer where no second instance can open the store (then no item can be foreign)."""
    if handle.private_store:
        ctx.log(f"no peer session: {handle.private_store}")
        return None, []
    peer = await open_peer(ctx, ctx.build.session_id + PEER_SUFFIX)
    items = [{"role": "assistant", "content": f"{tag}-peer-{n}"} for n in range(PEER_APPENDS)]
    ctx.log(f"a peer session ({ctx.build.session_id + PEER_SUFFIX!r}) on the same store: "
            f"add_items([{PEER_APPENDS} items]), one at a time")
    for item in items:
        await peer.session.add_items([item])
    return peer, items


CHECK = CheckSpec(
    id="ARIB-LIMIT-001",
    invariant="get_items(limit=k) returns this session's newest k items in order (none for "
    "k = 0; all, or a refusal naming the limit, for k < 0), never a peer session's, and under "
    "concurrent appends every window is the newest items of some real-time-consistent prefix",
    fault="writers x appends single-item add_items() racing readers x reads "
    "get_items(limit=k) (k seeded, 1..limit), released together; then a peer session id on "
    "the same store appends the newest rows, and limit reads at k = 1, limit, n - 1, n, n + 3, "
    "0 and -1 on both sessions are checked against their full histories",
    params=(
        Param("writers", 3, 1, 32, "concurrent writer tasks"),
        Param("appends", 8, 1, 500, "single-item appends per writer"),
        Param("readers", 2, 1, 16, "concurrent reader tasks"),
        Param("reads", 8, 1, 200, "get_items(limit=k) calls per reader"),
        Param("limit", 5, 1, 100, "largest k a reader asks for"),
        trials_param(10),
    ),
    run_trial=run_trial,
    mutants=(
        "reference_limit_returns_oldest",
        "reference_limit_window_from_stale_max",
        "async_sqlite_limit_window_from_stale_max",
        "sqlite_limit_newest_first",
        "sqlalchemy_limit_off_by_one",
        "reference_limit_reads_every_session",
        "sqlite_zero_limit_means_all",
        "async_sqlite_negative_limit_drops_oldest",
    ),
    generated=(
        Selector("reference", "ReferenceSession.get_items*", "swap_order"),
        Selector("reference", "ReferenceSession.get_items", "flip_comparison"),
        Selector("reference", "_newest", "flip_comparison"),
        Selector("sqlite-file", "SQLiteSession.get_items", "early_return"),
        Selector("async-sqlite-file", "AsyncSQLiteSession.get_items", "early_return"),
        Selector("advanced-sqlite-file", "AdvancedSQLiteSession.get_items", "early_return"),
        Selector("sqlalchemy-sqlite-file", "SQLAlchemySession.get_items.*._latest_first_stmt",
                 "flip_comparison"),
        Selector("sqlalchemy-sqlite-file", "SQLAlchemySession.get_items.*._latest_first_stmt",
                 "drop_session_where"),
        Selector("sqlite-file", "SQLiteSession.get_items.*._get_items_sync",
                 "widen_session_filter"),
        Selector("async-sqlite-file", "AsyncSQLiteSession.get_items", "widen_session_filter"),
        Selector("reference", "ReferenceSession.get_items*", "widen_session_filter"),
    ),
    timeout_s=60.0,
    parity=(
        ParityFault(
            "fault_limit_reads_race_appends", "fault:concurrency",
            "limit reads while two writers append: each window a suffix of some prefix",
            "arib.checks.openai_agents.parity.races:LimitReadsRaceAppends",
        ),
    ),
)
