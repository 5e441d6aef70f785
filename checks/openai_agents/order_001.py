"""ARIB-ORDER-001: concurrent writers' batches are read back whole, in each writer's order.

``writers`` tasks, released together from one barrier, each add ``batches`` multi-item
batches one after another; every ``add_items()`` is stamped with a logical clock when it is
invoked and when it returns. Afterwards one ``get_items()`` must show:

- every item exactly once (none lost, duplicated or foreign) and no call raised;
- each batch contiguous and in its own order (no other item inside it);
- each writer's batches in the order the writer added them;
- real-time order: a batch that returned before another batch was invoked (by any writer)
  is listed before it (appends are linearizable; the writer's own order is the special case
  of one writer's consecutive calls).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

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
from arib.checks.common import (
    canonical,
    first_differences,
    judged_trial,
    label,
    read_items,
    tally,
    trials_param,
)
from arib.ground.model import Counts, Trial


@dataclass(frozen=True)
class Append:
    """One batch append of one writer, with its logical invocation and return times."""

    batch: str
    writer: int
    index: int
    invoked: int
    returned: int


@dataclass(frozen=True)
class OrderJudgement:
    """The verdict on one read: counts, a mode naming the first defect, and a sample."""

    counts: Counts
    mode: str
    sample: str | None

    @property
    def violated(self) -> bool:
        """Whether the read broke the invariant."""
        return self.mode != "ordered"


def batch_runs(seen: Sequence[Any], batches: Mapping[str, Sequence[Any]]) -> tuple[list[str],
                                                                                    list[str]]:
    """The batches in the order ``seen`` lists them, and where a batch is broken up."""
    where = {canonical(item): name for name, items in batches.items() for item in items}
    listed: list[str] = []
    broken: list[str] = []
    pos = 0
    while pos < len(seen):
        name = where.get(canonical(seen[pos]))
        if name is None:
            pos += 1
            continue
        items = batches[name]
        run = 0
        while (pos + run < len(seen) and run < len(items)
               and canonical(seen[pos + run]) == canonical(items[run])):
            run += 1
        if run < len(items):
            broken.append(f"batch {name} is not contiguous and in order at position {pos}: "
                          f"{[label(i) for i in seen[pos:pos + len(items)]]}")
        listed.append(name)
        pos += max(run, 1)
    return listed, broken


def judge_order(seen: Sequence[Any], batches: Mapping[str, Sequence[Any]],
                appends: Sequence[Append], errors: Sequence[str] = ()) -> OrderJudgement:
    """Judge one full read against the appends that produced it (see the module docstring)."""
    expected = [item for name in batches for item in batches[name]]
    counts = tally(expected, seen, raised=len(errors))
    if errors:
        return OrderJudgement(counts, "call_raised", "; ".join(errors[:2]))
    if counts.total:
        return OrderJudgement(counts, "lossy", first_differences(expected, seen))
    listed, broken = batch_runs(seen, batches)
    if broken:
        return OrderJudgement(counts, "batch_split", "; ".join(broken[:2]))
    position = {name: i for i, name in enumerate(listed)}
    for a in appends:
        for b in appends:
            same_writer = a.writer == b.writer and a.index < b.index
            if same_writer and position[a.batch] > position[b.batch]:
                return OrderJudgement(counts, "writer_order",
                                      f"writer {a.writer}: batch {b.batch} is listed before "
                                      f"batch {a.batch}, which the writer added first")
    for a in appends:
        for b in appends:
            if a.returned < b.invoked and position[a.batch] > position[b.batch]:
                return OrderJudgement(counts, "real_time_order",
                                      f"batch {b.batch} (invoked t={b.invoked}) is listed "
                                      f"before batch {a.batch}, which returned earlier "
                                      f"(t={a.returned})")
    return OrderJudgement(counts, "ordered", None)


async def run_trial(ctx: TrialContext) -> Trial:
    """One trial: writers append batches concurrently; one read must show each whole, in order."""
    writers, per_writer, size = ctx.params["writers"], ctx.params["batches"], ctx.params["batch"]
    handle = await ctx.open()
    session = handle.session
    tag = f"{ctx.seed:016x}"
    batches = {f"w{w}b{b}": [{"role": "user", "content": f"{tag}-w{w}b{b}-{i}"}
                             for i in range(size)]
               for w in range(writers) for b in range(per_writer)}
    order = list(range(writers))
    ctx.rng.shuffle(order)
    ctx.log(f"{writers} writers x {per_writer} batches of {size} items released together, "
            f"start order {order}")
    clock = itertools.count()
    appends: list[Append] = []
    errors: list[str] = []
    barrier = Barrier(writers)

    async def writer(w: int) -> None:
        await barrier.wait()
        for b in range(per_writer):
            name = f"w{w}b{b}"
            invoked = next(clock)
            try:
                await session.add_items(batches[name])
            except Exception as exc:  # noqa: BLE001 - a write that raises is evidence
                errors.append(f"add_items({name}) raised {describe(exc)}")
            appends.append(Append(name, w, b, invoked, next(clock)))

    async with actors() as group:
        for w in order:
            group.start_soon(writer, w, name=f"writer {w}")
    for a in sorted(appends, key=lambda a: a.invoked):
        ctx.log(f"  add {a.batch}: invoked t={a.invoked}, returned t={a.returned}")
    ctx.log("get_items()")
    try:
        seen = await read_items(session)
    except Exception as exc:  # noqa: BLE001 - a read that raises shows nothing
        return Trial(ctx.index, ctx.seed, True,
                     Counts(lost=writers * per_writer * size, raised=len(errors) + 1),
                     mode="read_raised", sample=f"get_items raised {describe(exc)}",
                     ops=tuple(ctx.ops))
    return judged_trial(ctx, lambda: judge_order(seen, batches, appends, errors))


CHECK = CheckSpec(
    id="ARIB-ORDER-001",
    invariant="under concurrent writers, get_items() lists each batch whole and in order, each "
    "writer's batches in the writer's order, and every batch after those that returned before "
    "it began",
    fault="writers x batches sequential multi-item add_items() per writer, writers released "
    "together from one barrier",
    params=(
        Param("writers", 4, 1, 32, "concurrent writer tasks"),
        Param("batches", 5, 1, 100, "batches each writer adds, one after another"),
        Param("batch", 3, 2, 50, "items per batch"),
        trials_param(4),
    ),
    run_trial=run_trial,
    mutants=(
        "reference_add_batch_item_by_item",
        "reference_read_orders_by_body",
        "async_sqlite_add_batch_item_by_item",
        "sqlite_add_batch_item_by_item",
    ),
    generated=(
        Selector("reference", "ReferenceSession.add_items", "drop_await"),
        Selector("reference", "ReferenceSession.get_items", "flip_comparison"),
        Selector("sqlite-file", "SQLiteSession.add_items", "drop_await"),
        Selector("async-sqlite-file", "AsyncSQLiteSession.add_items", "early_return"),
        Selector("advanced-sqlite-file", "AdvancedSQLiteSession.add_items", "early_return"),
        Selector("sqlalchemy-sqlite-file", "SQLAlchemySession.add_items", "drop_await"),
    ),
    timeout_s=60.0,
    concurrent=True,
    schedule=SchedulePlan("random", timers="virtual"),
    parity=(
        ParityFault(
            "fault_concurrent_batches", "fault:concurrency",
            "three writers add two 3-item batches each, together: batches whole and in "
            "order",
            "arib.checks.openai_agents.parity.races:ConcurrentBatches",
        ),
    ),
)
