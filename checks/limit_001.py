"""ARIB-LIMIT-001: get_items(limit=k) is the newest k items, in order, even under appends.

``writers`` tasks each append ``appends`` single items one after another while ``readers``
tasks each take ``reads`` windows ``get_items(limit=k)`` (k seeded, 1..``limit``), all
released together from one barrier; every call is stamped with a logical clock when it is
invoked and when it returns. Afterwards a full read ``F = get_items()`` is taken, then
``get_items(limit=k)`` for k in 1, ``limit``, ``len(F)`` and ``len(F) + 3``.

Invariant, made precise (the store is append-only here, so every state it passes through is
a prefix ``F[:j]`` of the final history):

- ``F`` holds every appended item exactly once, and no call raised;
- after the writers: ``get_items(limit=k) == F[-k:]`` (all of ``F`` when k > len(F));
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

from checks.base import Barrier, CheckSpec, Param, Selector, TrialContext, describe
from checks.common import (
    canonical,
    first_differences,
    judged_trial,
    label,
    read_items,
    tally,
    trials_param,
)
from harness.model import Counts, Trial


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
        return self.mode != "consistent"


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


def judge_limit(history: Sequence[Any], expected: Sequence[Any], appended: dict[str, Stamp],
                windows: Sequence[Window], finals: Sequence[tuple[int, Sequence[Any]]],
                errors: Sequence[str] = ()) -> LimitJudgement:
    """Judge a trial's reads against the full history (see the module docstring)."""
    counts = tally(expected, history, errors=len(errors))
    if errors:
        return LimitJudgement(counts, "call_raised", "; ".join(errors[:2]))
    if counts.total:
        return LimitJudgement(counts, "lossy", first_differences(expected, history))
    for k, got in finals:
        want = list(history[-k:]) if k else []
        if [canonical(i) for i in got] != [canonical(i) for i in want]:
            return LimitJudgement(counts, "wrong_window",
                                  f"after the writers, get_items(limit={k}) returned "
                                  f"{[label(i) for i in got][:4]} ({len(got)} items); "
                                  f"expected the newest {len(want)}, ending "
                                  f"{[label(i) for i in want][-2:]}")
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
    return LimitJudgement(counts, "consistent", None)


async def run_trial(ctx: TrialContext) -> Trial:
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
    ctx.log("get_items(); then get_items(limit=k) for k in 1, limit, len, len + 3")
    try:
        history = await read_items(session)
        finals = []
        for k in dict.fromkeys((1, limit, len(history), len(history) + 3)):
            if k > 0:
                finals.append((k, await read_items(session, k)))
    except Exception as exc:  # noqa: BLE001 - a read that raises shows nothing
        return Trial(ctx.index, ctx.seed, True,
                     Counts(lost=len(expected), errors=len(errors) + 1), mode="read_raised",
                     sample=f"final read raised {describe(exc)}", ops=tuple(ctx.ops))
    return judged_trial(
        ctx, lambda: judge_limit(history, expected, appended, windows, finals, errors))


CHECK = CheckSpec(
    id="ARIB-LIMIT-001",
    invariant="get_items(limit=k) returns the newest k items in order, and under concurrent "
    "appends every window is the newest items of some real-time-consistent prefix",
    fault="writers x appends single-item add_items() racing readers x reads "
    "get_items(limit=k) (k seeded, 1..limit), released together; then limit reads checked "
    "against the full history",
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
    ),
    generated=(
        Selector("reference", "ReferenceSession.get_items", "swap_order"),
        Selector("reference", "ReferenceSession.get_items", "flip_comparison"),
        Selector("sqlite-file", "SQLiteSession.get_items", "early_return"),
        Selector("async-sqlite-file", "AsyncSQLiteSession.get_items", "early_return"),
        Selector("advanced-sqlite-file", "AdvancedSQLiteSession.get_items", "early_return"),
        Selector("sqlalchemy-sqlite-file", "SQLAlchemySession.get_items.*._latest_first_stmt",
                 "flip_comparison"),
    ),
    timeout_s=60.0,
)
