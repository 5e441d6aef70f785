"""ARIB-CLEAR-001: clear_session() racing add_items() leaves some serial order's state.

The store starts with a few seed items. Then ``writers`` tasks each add ``batches``
multi-item batches one after another, and ``clears`` tasks each call ``clear_session()``
once (after a seeded number of scheduler checkpoints), all released together from one
barrier. Every call is stamped with a logical clock when it is invoked and when it returns.

The invariant is linearizability of the final state, made precise: the final
``get_items()`` must equal ``B1 + B2 + ... + Bn``, the concatenation of distinct batches,
each whole and in its own order (no seed item, no foreign item, no partial batch), and
there must be a clear ``L`` (the last one in the serial order) such that, writing
``x < y`` when call ``x`` returned before call ``y`` was invoked:

- no present batch ``B`` and clear ``c`` have ``B < c`` (a batch that ended before a clear
  began cannot survive it);
- no absent batch ``A`` has ``L < A`` (a batch that began after the last clear ended must
  be visible);
- no other clear ``c`` has ``L < c``;
- no two present batches have ``Bj < Bi`` for ``i < j`` (they are listed in an order
  consistent with completion).

Those are exactly the conditions for a serial order "absent batches and other clears, then
L, then B1..Bn" that respects real time, so the final state is that of SOME serial order of
the calls. No call may raise.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import anyio.lowlevel

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
from arib.checks.common import canonical, judged_trial, label, read_items, trials_param
from arib.ground.model import Counts, Trial


@dataclass(frozen=True)
class Call:
    """One racing call: a batch ``add_items`` (``batch`` names it) or a clear (``None``)."""

    name: str
    batch: str | None
    invoked: int
    returned: int

    def before(self, other: Call) -> bool:
        """True when this call returned before ``other`` was invoked (real-time order)."""
        return self.returned < other.invoked


@dataclass(frozen=True)
class ClearJudgement:
    """The verdict on one race: counts, a mode naming the first defect, and a sample."""

    counts: Counts
    mode: str
    sample: str | None

    @property
    def violated(self) -> bool:
        """Whether the race left a state no serial order gives."""
        return self.mode != "serializable"


def split_batches(final: Sequence[Any], batches: Mapping[str, Sequence[Any]],
                  seeds: Sequence[Any]) -> tuple[list[str], Counts, str | None]:
    """Parse ``final`` as whole batches; return their names, counts and the first defect."""
    where = {canonical(item): (name, i) for name, items in batches.items()
             for i, item in enumerate(items)}
    seeded = {canonical(item) for item in seeds}
    present: list[str] = []
    lost = duplicated = foreign = 0
    problems: list[str] = []
    pos = 0
    while pos < len(final):
        key = canonical(final[pos])
        if key in seeded or key not in where:
            foreign += 1
            problems.append(f"{'seed item survived a clear' if key in seeded else 'foreign'}: "
                            f"{label(final[pos])}")
            pos += 1
            continue
        name, _ = where[key]
        items = batches[name]
        run = 0
        while (pos + run < len(final) and run < len(items)
               and canonical(final[pos + run]) == canonical(items[run])):
            run += 1
        if run != len(items):
            shown = [label(i) for i in final[pos:pos + max(run, 1)]]
            problems.append(f"batch {name} partial or out of order at position {pos}: "
                            f"{shown} of {len(items)} items")
            lost += len(items) - max(run, 1)
            pos += max(run, 1)
            continue
        if name in present:
            duplicated += len(items)
            problems.append(f"batch {name} visible twice")
        present.append(name)
        pos += run
    return present, Counts(lost=lost, duplicated=duplicated, foreign=foreign), (
        "; ".join(problems[:3]) if problems else None)


def serial_order_problem(present: Sequence[str], calls: Sequence[Call]) -> str | None:
    """None when some serial order respecting real time gives ``present``; else why not."""
    adds = {c.batch: c for c in calls if c.batch is not None}
    clears = [c for c in calls if c.batch is None]
    shown = [adds[name] for name in present]
    for c in clears:
        for b in shown:
            if b.before(c):
                return f"batch {b.batch} returned before {c.name} began, yet survived it"
    for i, early in enumerate(shown):
        for late in shown[i + 1:]:
            if late.before(early):
                return (f"batch {late.batch} returned before batch {early.batch} began, yet is "
                        f"listed after it")
    if not clears:
        return None
    absent = [a for name, a in adds.items() if name not in present]
    reasons = []
    for last in clears:
        bad = next((a for a in absent if last.before(a)), None)
        other = next((c for c in clears if c is not last and last.before(c)), None)
        if bad is None and other is None:
            return None
        reasons.append(f"{last.name} cannot be last: "
                       + (f"batch {bad.batch} began after it ended and is missing" if bad
                          else f"{other.name} began after it ended"))  # type: ignore[union-attr]
    return "; ".join(reasons[:2])


def judge_clear(final: Sequence[Any], batches: Mapping[str, Sequence[Any]],
                seeds: Sequence[Any], calls: Sequence[Call],
                errors: Sequence[str] = ()) -> ClearJudgement:
    """Judge the state a race of batch appends and clears left (see the module docstring)."""
    present, counts, problem = split_batches(final, batches, seeds)
    counts = counts + Counts(raised=len(errors))
    if errors:
        return ClearJudgement(counts, "call_raised", "; ".join(errors[:2]))
    if problem:
        mode = ("partial_batch" if "partial" in problem else
                "survived_clear" if "seed" in problem else
                "duplicated" if "twice" in problem else "foreign")
        return ClearJudgement(counts, mode, problem)
    order = serial_order_problem(present, calls)
    if order:
        return ClearJudgement(counts, "not_serializable",
                              f"final batches {present}: {order}")
    return ClearJudgement(counts, "serializable", None)


async def run_trial(ctx: TrialContext) -> Trial:
    """One trial: writers append batches while clears run; the final state is judged."""
    writers, per_writer = ctx.params["writers"], ctx.params["batches"]
    size, clears = ctx.params["batch"], ctx.params["clears"]
    handle = await ctx.open()
    session = handle.session
    tag = f"{ctx.seed:016x}"
    seeds = [{"role": "user", "content": f"{tag}-seed-{i}"} for i in range(size)]
    batches = {f"w{w}b{b}": [{"role": "user", "content": f"{tag}-w{w}b{b}-{i}"}
                             for i in range(size)]
               for w in range(writers) for b in range(per_writer)}
    ctx.log(f"add_items([{size} seed items])")
    try:
        await session.add_items(seeds)
    except Exception as exc:  # noqa: BLE001 - a store that cannot be filled is evidence
        return Trial(ctx.index, ctx.seed, True, Counts(raised=1), mode="setup_failed",
                     sample=f"seed add_items raised {describe(exc)}", ops=tuple(ctx.ops))
    delays = [ctx.rng.randrange(0, writers + 1) for _ in range(clears)]
    tasks = [f"writer {w}" for w in range(writers)] + [f"clear {c}" for c in range(clears)]
    ctx.rng.shuffle(tasks)
    ctx.log(f"{writers} writers x {per_writer} batches of {size} items and {clears} x "
            f"clear_session() (after {delays} checkpoints) released together, start order "
            f"{tasks}")
    clock = itertools.count()
    calls: list[Call] = []
    errors: list[str] = []
    barrier = Barrier(len(tasks))

    async def writer(w: int) -> None:
        await barrier.wait()
        for b in range(per_writer):
            name = f"w{w}b{b}"
            invoked = next(clock)
            try:
                await session.add_items(batches[name])
            except Exception as exc:  # noqa: BLE001 - a write that raises is evidence
                errors.append(f"add_items({name}) raised {describe(exc)}")
            calls.append(Call(f"add {name}", name, invoked, next(clock)))

    async def clearer(c: int) -> None:
        await barrier.wait()
        for _ in range(delays[c]):
            await anyio.lowlevel.checkpoint()
        invoked = next(clock)
        try:
            await session.clear_session()
        except Exception as exc:  # noqa: BLE001 - a clear that raises is evidence
            errors.append(f"clear {c} raised {describe(exc)}")
        calls.append(Call(f"clear {c}", None, invoked, next(clock)))

    async with actors() as group:
        for task in tasks:
            kind, number = task.split()
            group.start_soon(writer if kind == "writer" else clearer, int(number), name=task)
    for call in sorted(calls, key=lambda c: c.invoked):
        ctx.log(f"  {call.name}: invoked t={call.invoked}, returned t={call.returned}")
    ctx.log("get_items()")
    try:
        final = await read_items(session)
    except Exception as exc:  # noqa: BLE001 - a read that raises shows nothing
        return Trial(ctx.index, ctx.seed, True, Counts(raised=len(errors) + 1),
                     mode="read_raised", sample=f"get_items raised {describe(exc)}",
                     ops=tuple(ctx.ops))
    return judged_trial(ctx, lambda: judge_clear(final, batches, seeds, calls, errors))


CHECK = CheckSpec(
    id="ARIB-CLEAR-001",
    invariant="clear_session() racing add_items() leaves the state of some serial order that "
    "respects real time: whole batches only, none partial, none surviving a later clear",
    fault="writers x batches sequential multi-item add_items() and clears x clear_session() "
    "on a seeded store, released together from one barrier",
    params=(
        Param("writers", 4, 1, 32, "concurrent writer tasks"),
        Param("batches", 6, 1, 50, "batches each writer adds, one after another"),
        Param("batch", 3, 2, 50, "items per batch (and seed items)"),
        Param("clears", 2, 1, 8, "concurrent clear_session() calls"),
        trials_param(2),
    ),
    run_trial=run_trial,
    mutants=(
        "reference_clear_pops_counted_items",
        "reference_add_batch_item_by_item",
        "async_sqlite_clear_pops_counted_items",
        "sqlite_clear_pops_counted_items",
        "sqlite_clear_relies_on_cascade",
    ),
    generated=(
        Selector("reference", "ReferenceSession.clear_session", "early_return"),
        Selector("reference", "ReferenceSession.clear_session", "drop_await"),
        Selector("sqlite-file", "SQLiteSession.clear_session", "drop_await"),
        Selector("async-sqlite-file", "AsyncSQLiteSession.clear_session", "early_return"),
        Selector("advanced-sqlite-file", "AdvancedSQLiteSession.clear_session", "drop_await"),
        Selector("sqlalchemy-sqlite-file", "SQLAlchemySession.clear_session", "early_return"),
    ),
    timeout_s=60.0,
    concurrent=True,
    schedule=SchedulePlan("random", timers="virtual"),
    parity=(
        ParityFault(
            "fault_clear_races_writers", "fault:concurrency",
            "clear_session races two batch writers: the state of some serial order",
            "arib.checks.openai_agents.parity.races:ClearRacesWriters",
        ),
    ),
)
