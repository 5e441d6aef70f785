"""ARIB-DRAIN-001: close() drains the calls in flight and refuses the rest; nothing lands later.

An agent server closes a session when a conversation ends or the worker shuts down, while
other tasks of that conversation may still be appending a tool result, popping a correction
or reading a window. A close that pulls the connection out from under a call in flight loses
or half-applies it; a close that lets a queued call through afterwards writes to a closed
session. Invariant, for a session whose close is terminal, with every call stamped on a
logical clock when invoked and when it ended:

- a call invoked before ``close()`` was invoked completes normally (it was in flight: close
  drains it), and its effect stands;
- a call invoked after ``close()`` returned is refused loudly, with no effect;
- a call invoked while ``close()`` ran either completes (effect stands) or is refused (no
  effect);
- effects add up exactly: the history read afterwards through a fresh instance is the seed
  items plus every batch whose ``add_items`` returned, minus every item a ``pop_item``
  returned -- nothing more, nothing less, nothing twice;
- nothing lands after ``close()`` returned: a marker appended through the fresh instance the
  moment close returned is the newest item at the end.

The fault: ``calls`` appends, pops and limit reads on the session released together, with
``close()`` invoked after a seeded number of scheduler checkpoints; one call of each kind
invoked the moment close() is called (it may find the session open, then closed), and one of
each kind after close returned. A lane whose close is not terminal (RedisSession with an
injected client, documented) or which has no close abstains.
"""

from __future__ import annotations

import itertools
from collections import Counter
from dataclasses import dataclass
from typing import Any

import anyio
import anyio.lowlevel

from arib.checks.base import (
    Barrier,
    CheckSpec,
    NotApplicable,
    Param,
    Selector,
    TrialContext,
    describe,
)
from arib.checks.common import canonical, first_differences, label, read_items, trials_param
from arib.ground.model import Counts, Trial

KINDS = ("add", "pop", "read")


@dataclass
class Call:
    """One call on the session being closed: what it was, when, and how it ended."""

    name: str
    kind: str
    batch: list[Any]
    invoked: int = -1
    ended: int = -1
    value: Any = None
    error: BaseException | None = None

    @property
    def returned(self) -> bool:
        """Whether the call ended normally."""
        return self.error is None and self.ended >= 0


def judge_drain(seeds: list[Any], calls: list[Call], close_invoked: int, close_returned: int,
                marker: Any, final: list[Any]) -> tuple[str, str, Counts] | None:
    """(mode, why, counts) when the close broke the invariant, None when it kept it."""
    for call in calls:
        if call.invoked < close_invoked and not call.returned:
            return "not_drained", (f"{call.name} was in flight when close() was called and "
                                   f"ended with {describe(call.error)}"), (
                Counts(raised=1) if call.error is not None else Counts(wrong_result=1))
        if call.invoked > close_returned and call.returned:
            return "accepted_after_close", (f"{call.name}, invoked after close() returned, "
                                            f"returned normally"), Counts(wrong_result=1)
    want: Counter[str] = Counter(canonical(i) for i in seeds)
    for call in calls:
        if call.kind == "add" and call.returned:
            want.update(canonical(i) for i in call.batch)
        if call.kind == "pop" and call.returned and call.value is not None:
            want.subtract([canonical(call.value)])
    want[canonical(marker)] += 1
    got = Counter(canonical(i) for i in final)
    if +want != got:
        expected = [i for i in seeds] + [i for c in calls if c.kind == "add" and c.returned
                                         for i in c.batch] + [marker]
        lost = sum((+want - got).values())
        extra = sum((got - +want).values())
        return "effects_do_not_add_up", (
            f"the history holds {len(final)} items; the calls that returned account for "
            f"{sum((+want).values())}: {lost} missing, {extra} unaccounted "
            f"({first_differences(expected, final)})"), Counts(lost=lost, duplicated=extra)
    if not final or canonical(final[-1]) != canonical(marker):
        after = [label(i) for i in final[[canonical(i) for i in final].index(
            canonical(marker)) + 1:]] if canonical(marker) in got else []
        return "landed_after_close", (f"items landed after close() returned, after the "
                                      f"marker: {after[:3]}"), Counts(wrong_result=1)
    return None


async def run_trial(ctx: TrialContext) -> Trial:
    """One trial: appends, pops and reads race close(); drains, refusals and effects judged.

    Long (over 80 lines) on purpose: the trial is one scenario read top to bottom, and its
    concurrent tasks are closures over the trial's state; split up, that state would be
    threaded through every helper.
    """
    n_calls = ctx.params["calls"]
    handle = await ctx.open()
    session = handle.session
    tag = f"{ctx.seed:016x}"
    seeds = [{"role": "user", "content": f"{tag}-seed-{n}"} for n in range(4)]
    ctx.log(f"add_items({len(seeds)} seed items)")
    try:
        await session.add_items(seeds)
        observer = (await ctx.reopen(handle)).session
        await read_items(observer)
    except NotApplicable:
        raise  # no second instance can open this store: the check abstains
    except Exception as exc:  # noqa: BLE001 - a store that cannot be filled is evidence
        return Trial(ctx.index, ctx.seed, True, Counts(raised=1), mode="setup_failed",
                     sample=f"setup raised {describe(exc)}", ops=tuple(ctx.ops))
    calls = [Call(f"{kind} #{n}", kind, [{"role": "user", "content": f"{tag}-add-{n}-{i}"}
                                         for i in range(ctx.rng.randint(1, 3))])
             for n, kind in enumerate(ctx.rng.choice(KINDS) for _ in range(n_calls))]
    during = [Call(f"during-close {kind}", kind,
                   [{"role": "user", "content": f"{tag}-during-{kind}"}]) for kind in KINDS]
    late = [Call(f"late {kind}", kind, [{"role": "user", "content": f"{tag}-late-{kind}"}])
            for kind in KINDS]
    close_called = anyio.Event()
    delay = ctx.rng.randrange(n_calls + 2)
    clock = itertools.count()
    stamps: dict[str, int] = {}
    marker = {"role": "user", "content": f"{tag}-marker-after-close"}
    barrier = Barrier(n_calls + 1)
    ctx.log(f"{[c.name for c in calls]} released together; close() after {delay} checkpoints, "
            f"{[c.name for c in during]} as soon as close() is called; then "
            f"{[c.name for c in late]}")

    async def run(call: Call) -> None:
        call.invoked = next(clock)
        try:
            if call.kind == "add":
                call.value = await session.add_items(call.batch)
            elif call.kind == "pop":
                call.value = await session.pop_item()
            else:
                call.value = await read_items(session, 2)
        except Exception as exc:  # noqa: BLE001 - a refusal or a failure, judged later
            call.error = exc
        call.ended = next(clock)

    async def released(call: Call) -> None:
        await barrier.wait()
        await run(call)

    async def while_closing(call: Call) -> None:
        await close_called.wait()
        await run(call)

    async def closer() -> None:
        await barrier.wait()
        for _ in range(delay):
            await anyio.lowlevel.checkpoint()
        stamps["close invoked"] = next(clock)
        close_called.set()
        try:
            await ctx.close(session)
        except Exception as exc:  # noqa: BLE001 - a close that raises is evidence
            stamps["close raised"] = 1
            ctx.log(f"close() raised {describe(exc)}")
        stamps["close returned"] = next(clock)
        await observer.add_items([marker])

    async with anyio.create_task_group() as tg:
        for call in calls:
            tg.start_soon(released, call)
        for call in during:
            tg.start_soon(while_closing, call)
        tg.start_soon(closer)
    for call in late:
        await run(call)
    final = await read_items(observer)
    for call in sorted(calls + during + late, key=lambda c: c.invoked):
        ended = "returned" if call.returned else f"raised {describe(call.error)}"
        ctx.log(f"  {call.name}: invoked t={call.invoked}, ended t={call.ended}: {ended}")
    ctx.log(f"  close(): invoked t={stamps['close invoked']}, returned "
            f"t={stamps['close returned']}; marker appended through a fresh instance")
    if "close raised" in stamps:
        return Trial(ctx.index, ctx.seed, True, Counts(raised=1), mode="close_raised",
                     sample="close() raised while calls were in flight", ops=tuple(ctx.ops))
    verdict = judge_drain(seeds, calls + during + late, stamps["close invoked"],
                          stamps["close returned"], marker, final)
    if verdict is None:
        return Trial(ctx.index, ctx.seed, False, Counts(), mode="drained", ops=tuple(ctx.ops))
    mode, why, counts = verdict
    return Trial(ctx.index, ctx.seed, True, counts, mode=mode, sample=why[:400],
                 ops=tuple(ctx.ops))


CHECK = CheckSpec(
    id="ARIB-DRAIN-001",
    invariant="close() lets every call already in flight complete with its effect, refuses "
    "every call made after it returned with no effect, and nothing lands after it returned: "
    "the history is exactly the effects of the calls that returned",
    fault="calls appends, pops and limit reads released together with a close() invoked "
    "after a seeded number of scheduler checkpoints, one call of each kind invoked as close "
    "is called and one after it returned; judged through a fresh instance, with a marker "
    "appended when close returned",
    params=(
        Param("calls", 6, 1, 64, "calls released together with the close"),
        trials_param(10),
    ),
    run_trial=run_trial,
    mutants=(
        "reference_close_does_not_wait",
        "redis_close_pulls_the_client",
    ),
    generated=(
        # The reference drains through its FIFO instance lock
        # (arib.targets.openai_agents.reference_advanced), so its close() without its own lock is
        # not a drain defect; a close that returns at once without closing is.
        Selector("reference", "ReferenceSession.close", "early_return"),
        Selector("redis-from-url", "RedisSession.add_items", "drop_lock"),
        Selector("redis-from-url", "RedisSession.close", "drop_lock"),
    ),
    requires_close=True,
    requires_terminal_close=True,
    timeout_s=90.0,
)
