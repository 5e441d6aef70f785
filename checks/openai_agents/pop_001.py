"""ARIB-POP-001: concurrent pops hand out each item at most once, from the newest end.

M items are stored with one ``add_items()``; then N ``pop_item()`` calls are released
together from one barrier (round 1, N < M by default: the pops must take the newest N), and
once more on the M - N items left (round 2, fewer items than pops: the pops race the store
running empty). Whatever order the pops of a round take, a correct store behaves like some
serial order of them, so after each round (M being the items that round started with):

- no call raised;
- exactly ``min(N, M)`` pops returned an item and the others returned ``None``;
- no item was returned twice, and no returned item is also still stored (duplicated);
- every returned or remaining item is one of the M (foreign otherwise);
- returned + remaining is exactly the M items (lost otherwise);
- the returned items are the newest ``min(N, M)`` and the remaining ones are the oldest,
  in their original order (pop removes the most recent item, whichever pop runs first);
- a fresh instance on the store (where one can open it) reads exactly what the popping session
  reads: a popped item is not back for anyone else (an uncommitted pop is).

The first calls on the fresh store are ``pop_item()``, which answers None, and
``clear_session()`` (a backend that creates its tables lazily must do so for these calls too).
A pop that never returns (a claim loop that cannot end) breaks the invariant too
(``hang_invariant``).

In the first trial the M items are stored in two ``add_items()`` calls on either side of a
wall-clock second: SQLite's ``CURRENT_TIMESTAMP`` has one-second resolution, and a pop must
take the newest item also when the history spans a clock second.
"""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import anyio

from arib.checks.base import (
    Barrier,
    CheckSpec,
    Param,
    ParityFault,
    SchedulePlan,
    Selector,
    TrialContext,
    actors,
    describe,
)
from arib.checks.common import canonical, first_differences, label, read_items, tally, trials_param
from arib.ground.model import Counts, Trial

SECOND_MARGIN_S = 0.02  # past the second boundary, so the second batch is in the next second


@dataclass(frozen=True)
class PopJudgement:
    """What a pop race left: counts, a mode naming the first defect, and a short sample."""

    counts: Counts
    mode: str
    sample: str | None

    @property
    def violated(self) -> bool:
        """Whether the pop race broke the invariant."""
        return self.mode != "exact"


def judge_pops(items: Sequence[Any], poppers: int, returned: Sequence[Any | None],
               remaining: Sequence[Any], errors: Sequence[str] = ()) -> PopJudgement:
    """Judge one race of ``poppers`` pops on ``items`` (oldest first).

    ``returned`` holds what each pop that did not raise returned (``None`` for an empty
    store); ``remaining`` is a read taken after every pop ended; ``errors`` describes the
    pops that raised.
    """
    got = [r for r in returned if r is not None]
    want = min(poppers, len(items))
    counts = tally(items, [*got, *remaining], raised=len(errors))
    keep = [canonical(i) for i in items[: len(items) - want]]
    newest = Counter(canonical(i) for i in items[len(items) - want:])
    names = {canonical(r): label(r) for r in [*items, *got, *remaining]}
    again = [f"{names[k]} x{n}" for k, n in Counter(canonical(r) for r in got).items() if n > 1]
    if errors:
        return PopJudgement(counts, "pop_raised", "; ".join(errors[:2]))
    if again or counts.duplicated:
        shown = ", ".join(again[:3]) or first_differences(items, [*got, *remaining])
        return PopJudgement(counts, "duplicated",
                            f"returned more than once or also still stored: {shown}")
    if counts.foreign or counts.lost:
        return PopJudgement(counts, "lost" if counts.lost else "foreign",
                            first_differences(items, [*got, *remaining]))
    if len(got) != want:
        return PopJudgement(counts, "short" if len(got) < want else "overlong",
                            f"{len(got)} of {poppers} pops returned an item on a store of "
                            f"{len(items)}; expected {want}")
    if Counter(canonical(r) for r in got) != newest or [canonical(i) for i in remaining] != keep:
        return PopJudgement(counts, "wrong_end",
                            f"pops returned {[label(r) for r in got][:4]}; the newest "
                            f"{want} were expected, and {len(keep)} oldest left in order; "
                            f"left {[label(r) for r in remaining][:4]}")
    return PopJudgement(counts, "exact", None)


def is_item(value: Any) -> bool:
    """True for None or a JSON-serializable item (a coroutine, say, is not one)."""
    try:
        canonical(value)
    except (TypeError, ValueError):
        return False
    return True


async def pop_race(ctx: TrialContext, session: Any, before: list[Any],
                   name: str, probe: Any = None) -> PopJudgement:
    """Release ``poppers`` pops together on a store holding ``before``; judge what is left."""
    poppers = ctx.params["poppers"]
    order = list(range(poppers))
    ctx.rng.shuffle(order)
    ctx.log(f"{name}: {poppers} x pop_item() released together on {len(before)} items, "
            f"start order {order}")
    barrier = Barrier(poppers)
    returned: dict[int, Any] = {}
    errors: dict[int, str] = {}

    async def popper(p: int) -> None:
        await barrier.wait()
        try:
            value = await session.pop_item()
        except Exception as exc:  # noqa: BLE001 - a pop that raises is evidence
            errors[p] = f"{name} pop {p}: {describe(exc)}"
            return
        if is_item(value):
            returned[p] = value
        else:
            errors[p] = f"{name} pop {p} returned {type(value).__name__}, not an item"

    async with actors() as group:
        for p in order:
            group.start_soon(popper, p, name=f"popper {p}")
    got = [returned[p] for p in sorted(returned)]
    ctx.log(f"{name}: pops returned {[None if r is None else label(r) for r in got]}; "
            f"{len(errors)} raised")
    ctx.log(f"{name}: get_items()" + ("; a fresh instance on the store: get_items()"
                                      if probe is not None else ""))
    try:
        remaining = await read_items(session)
        settled = remaining if probe is None else await read_items(probe)
        if not all(is_item(r) for r in [*remaining, *settled]):
            raise TypeError("get_items() returned a value that is not a JSON item")
    except Exception as exc:  # noqa: BLE001 - a read that raises shows nothing
        return PopJudgement(Counts(lost=len(before), raised=len(errors) + 1), "read_raised",
                            f"get_items raised {describe(exc)}")
    verdict = judge_pops(before, poppers, got, remaining, [errors[p] for p in sorted(errors)])
    if verdict.violated or [canonical(i) for i in settled] == [canonical(i) for i in remaining]:
        return verdict
    left = {canonical(r) for r in remaining}
    back = [label(i) for i in settled if canonical(i) not in left]
    gone = sum(1 for k in left if k not in {canonical(i) for i in settled})
    return PopJudgement(Counts(lost=gone, duplicated=len(back)), "not_settled",
                        f"the popping session shows {len(remaining)} items left, a fresh "
                        f"instance on the store {len(settled)}; popped but still stored: "
                        f"{back[:3]}")


async def fill(ctx: TrialContext, session: Any, items: list[Any]) -> None:
    """Store ``items``; in the first trial in two add_items() calls on either side of a
    wall-clock second (SQLite's CURRENT_TIMESTAMP has one-second resolution), so a store
    that orders by that timestamp before its insertion order must still pop the newest."""
    if ctx.index != 0 or len(items) < 2:
        ctx.log(f"add_items([{len(items)} items])")
        await session.add_items(items)
        return
    half = len(items) // 2 + 1
    ctx.log(f"add_items([items 0..{half - 1}]); wait for the next wall-clock second; "
            f"add_items([items {half}..{len(items) - 1}])")
    await session.add_items(items[:half])
    now = time.time()
    await anyio.sleep(math.floor(now) + 1 - now + SECOND_MARGIN_S)
    await session.add_items(items[half:])


async def run_trial(ctx: TrialContext) -> Trial:
    """One trial: two rounds of concurrent pops on the stored items, each round judged."""
    size = ctx.params["items"]
    handle = await ctx.open()
    session = handle.session
    tag = f"{ctx.seed:016x}"
    items = [{"role": "user", "content": f"{tag}-item-{i}"} for i in range(size)]
    ctx.log("first calls on the fresh store: pop_item()  # answers None; clear_session()")
    try:
        first_pop = await session.pop_item()
        await session.clear_session()
    except Exception as exc:  # noqa: BLE001 - a fresh store must serve any first call
        return Trial(ctx.index, ctx.seed, True, Counts(raised=1), mode="pop_raised",
                     sample=f"a first call on a fresh store raised {describe(exc)}",
                     ops=tuple(ctx.ops))
    if first_pop is not None:
        what = label(first_pop) if is_item(first_pop) else type(first_pop).__name__
        return Trial(ctx.index, ctx.seed, True, Counts(foreign=1), mode="foreign",
                     sample=f"pop_item() on a fresh, empty store returned {what}, not None",
                     ops=tuple(ctx.ops))
    try:
        await fill(ctx, session, items)
    except Exception as exc:  # noqa: BLE001 - a store that cannot be filled is evidence
        return Trial(ctx.index, ctx.seed, True, Counts(lost=size, raised=1), mode="setup_failed",
                     sample=f"add_items raised {describe(exc)}", ops=tuple(ctx.ops))
    probe = None
    if handle.private_store:
        ctx.log(f"no fresh instance to read the store: {handle.private_store}")
    else:
        probe = (await ctx.reopen(handle)).session
    # Round 1 takes the newest items from a fuller store; round 2 races the pops against
    # the store running empty (fewer items than pops).
    first = await pop_race(ctx, session, items, "round 1", probe)
    if first.violated:
        return Trial(ctx.index, ctx.seed, True, first.counts, mode=first.mode,
                     sample=f"round 1: {first.sample}", ops=tuple(ctx.ops))
    rest = items[: max(size - ctx.params["poppers"], 0)]
    second = await pop_race(ctx, session, rest, "round 2", probe)
    return Trial(ctx.index, ctx.seed, second.violated, second.counts, mode=second.mode,
                 sample=f"round 2: {second.sample}" if second.sample else None,
                 ops=tuple(ctx.ops))


CHECK = CheckSpec(
    id="ARIB-POP-001",
    invariant="N concurrent pop_item() calls on M items return the newest min(N, M) items, "
    "each once, raise nothing, and leave exactly the others in order, for the popping session "
    "and for a fresh instance on the store",
    fault="poppers x pop_item() released together from one barrier on a store of items "
    "items (in the first trial written on either side of a wall-clock second), then again on "
    "what is left (fewer items than pops, so pops race an emptying store); each round read by "
    "the popping session and by a fresh instance",
    params=(
        Param("poppers", 8, 1, 64, "concurrent pop_item() calls"),
        Param("items", 13, 0, 1000, "items stored before the first race of pops"),
        trials_param(3),
    ),
    run_trial=run_trial,
    mutants=(
        "reference_pop_reads_then_deletes",
        "reference_pop_gives_up_when_busy",
        "sqlite_pop_selects_then_deletes",
        "async_sqlite_pop_selects_then_deletes",
        "async_sqlite_pop_left_uncommitted",
    ),
    generated=(
        Selector("reference", "ReferenceSession.pop_item", "early_return"),
        Selector("reference", "ReferenceSession.pop_item*", "flip_comparison"),
        Selector("reference", "ReferenceSession.pop_item*", "swap_order"),
        Selector("sqlite-file", "SQLiteSession.pop_item", "early_return"),
        Selector("async-sqlite-file", "AsyncSQLiteSession.pop_item", "early_return"),
        Selector("advanced-sqlite-file", "AdvancedSQLiteSession.pop_item*", "swap_order"),
        Selector("sqlalchemy-sqlite-file", "SQLAlchemySession._pop_item", "swap_order_method"),
        Selector("sqlalchemy-sqlite-file", "SQLAlchemySession.pop_item", "drop_await"),
    ),
    timeout_s=60.0,
    hang_invariant=True,
    concurrent=True,
    schedule=SchedulePlan("random", timers="virtual"),
    parity=(
        ParityFault(
            "fault_concurrent_pops", "fault:concurrency",
            "three pops at once on five items, then on two: newest first, each once",
            "arib.checks.openai_agents.parity.races:ConcurrentPops",
        ),
    ),
)
