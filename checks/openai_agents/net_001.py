"""ARIB-NET-001: a call whose connection fails in flight takes effect wholly or not at all, once.

Agent servers lose connections to their session store all the time: a server restarts, a
load balancer drops a flow, a request sits in a congested link while the caller's own
timeout fires. The caller is then told "connection closed" (or "cancelled") without knowing
whether its call took effect. What the store must guarantee, per call hit by such a fault:

- ``add_items(batch)``: afterwards the batch is wholly present or wholly absent, never torn or
  stored twice; a call that returned normally is present; when it is absent, one retry (as a
  careful caller does after reading) stores it exactly once;
- ``pop_item()``: a pop that returned item X removed exactly X, the newest item; a pop that
  raised removed at most the newest item, nothing else;
- ``clear_session()``: afterwards the history is empty, or (only when the call raised)
  unchanged;
- ``get_items(limit=k)``: a read that returned shows the newest k items (or all), unchanged;
- settled: nothing of a call lands after it ended (a second read a little later agrees with
  the first), and the session serves the next call: after every fault, the instance that
  was hit appends and reads the same history as a fresh instance.

The fault is real and lands inside the call, repeatedly: every operation under every fault
kind, in seeded order, at a point drawn among the request/reply chunks (or checkpoints) that
an unfaulted call of the same kind takes, counted at the start of the trial. On a server
lane (Redis, PostgreSQL) the instance reaches its server through a relay of our own
(``arib.checks.openai_agents._netfault.CutProxy``) that cuts the connection at the k-th request
chunk (the server never sees it) or the k-th reply chunk (the server did the work, the reply is
lost), or holds the k-th request in flight while the caller's timeout cancels the call; a redis-py
client gets a pool of one connection (``max_connections=1``), so a connection a fault leaves
checked out shows at the next call. On a lane without a server (a local file store, whose
only way to lose a reply is the caller giving up on it) the call is cancelled at a seeded
moment within the time an unfaulted call takes, as an ``anyio.fail_after`` around it would
(a quarter of them before the call's first suspension).
Every trial observes the store through a second, fault-free instance.
"""

from __future__ import annotations

import asyncio
import functools
import random
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

import anyio

from arib.checks.base import CheckSpec, Param, Selector, TrialContext, describe
from arib.checks.common import canonical, first_differences, label, read_items, tally, trials_param
from arib.checks.openai_agents._netfault import Cut, Direction, Relayed, relayed
from arib.checks.openai_agents._settle import at_rest
from arib.ground.model import Counts, Trial

# How long a held request stays in flight, and how long after a call ends its effect must
# have settled (a second read then must agree with the first). On a lane without a server the
# second read waits instead until the process is at rest (arib.checks.openai_agents._settle: every
# task the call started done, every thread idle), at most SETTLE_S: event-driven and exact there,
# since all of the call's work is in this process; a server lane waits SETTLE_S of real time, as the
# server may still be running a request the relay delivered late.
HOLD_S = 0.1
SETTLE_S = 0.15
# The longest one faulted call may take (a reconnect included) before it counts as hung.
CALL_DEADLINE_S = 15.0
SERVER_FAULTS = ("cut-request", "cut-reply", "hold+cancel")


@dataclass(frozen=True)
class Fault:
    """Where one call is hit: a relay cut or hold at chunk ``skip``, or a cancellation
    ``delay_s`` after the call began."""

    kind: str
    skip: int = 0
    delay_s: float = 0.0

    def describe(self) -> str:
        """The fault in words, e.g. 'cut the connection at reply chunk #2'."""
        if self.kind == "cancel":
            return f"caller cancels the call {self.delay_s * 1000:.2f} ms after it began"
        if self.kind == "hold+cancel":
            return (f"hold request chunk #{self.skip + 1} {HOLD_S}s in flight and cancel the "
                    f"call then")
        where = "request" if self.kind == "cut-request" else "reply"
        return f"cut the connection at {where} chunk #{self.skip + 1}"


@dataclass
class Outcome:
    """What a faulted call did, and whether its fault fired."""

    value: Any = None
    error: BaseException | None = None
    cancelled: bool = False
    hung: bool = False
    fired: bool = False

    @property
    def returned(self) -> bool:
        """Whether the call ended normally: no exception, not cancelled, not hung."""
        return self.error is None and not self.cancelled and not self.hung

    def describe(self) -> str:
        """What the call did, in words, e.g. 'raised ...' or 'returned 3 items'."""
        if self.hung:
            return f"no answer within {CALL_DEADLINE_S}s"
        if self.cancelled:
            return "cancelled"
        if self.error is not None:
            return f"raised {describe(self.error)}"
        if isinstance(self.value, list):
            return f"returned {len(self.value)} items"
        return f"returned {label(self.value) if self.value is not None else None}"


async def call_under(fault: Fault, route: Relayed | None,
                     op: Callable[[], Awaitable[Any]]) -> Outcome:
    """Run ``op()`` with ``fault`` applied; never raises (the outcome says what happened)."""
    outcome = Outcome()
    scope = anyio.CancelScope()
    done = anyio.Event()
    loop = asyncio.get_running_loop()

    def fire(cancel: bool) -> Callable[[], None]:
        def hit() -> None:
            outcome.fired = True
            if cancel:
                scope.cancel()
        return hit

    def relayed_fire(cancel: bool) -> Callable[[], None]:
        def hand_over() -> None:  # called in the relay's thread: hit in this loop
            loop.call_soon_threadsafe(fire(cancel))
        return hand_over

    async def runner() -> None:
        with scope:
            try:
                outcome.value = await op()
            except Exception as exc:  # noqa: BLE001 - the exception is the evidence
                outcome.error = exc
        outcome.cancelled = scope.cancelled_caught
        done.set()

    async def canceller() -> None:
        if fault.delay_s:
            with anyio.move_on_after(fault.delay_s):
                await done.wait()
        if not done.is_set():
            fire(cancel=True)()

    with anyio.move_on_after(CALL_DEADLINE_S) as guard:
        async with anyio.create_task_group() as tg:
            if route is None:
                tg.start_soon(runner)
                tg.start_soon(canceller)
            elif fault.kind == "hold+cancel":
                route.proxy.arm(Cut(Direction.REQUEST, fault.skip, HOLD_S),
                                relayed_fire(cancel=True))
                tg.start_soon(runner)
            else:
                direction = Direction.REQUEST if fault.kind == "cut-request" else Direction.REPLY
                route.proxy.arm(Cut(direction, fault.skip), relayed_fire(cancel=False))
                tg.start_soon(runner)
    outcome.hung = guard.cancelled_caught
    if route is not None:
        route.proxy.disarm()
    return outcome


def keys(items: Sequence[Any]) -> list[str]:
    """The canonical JSON of each item."""
    return [canonical(i) for i in items]


def judge_call(op: str, arg: Any, before: Sequence[Any], after: Sequence[Any],
               outcome: Outcome) -> tuple[str, str] | None:
    """(mode, why) when the call broke the invariant, None when it kept it."""
    was, now = keys(before), keys(after)
    if outcome.hung:
        return "hung", f"{op} gave {outcome.describe()}"
    if op == "add":
        batch = keys(arg)
        if now == was + batch:
            return None
        if now == was:
            return ("acknowledged_lost", f"add_items returned normally but its batch of "
                    f"{len(batch)} is absent") if outcome.returned else None
        return "torn_or_twice", (f"add_items ({outcome.describe()}) left the history neither "
                                 f"with nor without its batch: "
                                 f"{first_differences(list(before) + list(arg), after)}")
    if op == "pop":
        newest_gone = bool(was) and now == was[:-1]
        if outcome.returned:
            got = outcome.value
            if not was:
                return None if got is None and not now else (
                    "pop_invented", f"pop_item on an empty session {outcome.describe()}")
            if newest_gone and got is not None and canonical(got) == was[-1]:
                return None
            return "pop_mismatch", (f"pop_item {outcome.describe()}, newest was "
                                    f"{label(before[-1])}; {len(was)} -> {len(now)} items")
        if now == was or newest_gone:
            return None
        return "pop_removed_other", (f"pop_item ({outcome.describe()}) changed the history "
                                     f"{len(was)} -> {len(now)} items, not at most the newest")
    if op == "clear":
        if not now or (now == was and not outcome.returned):
            return None
        return "clear_partial", f"clear_session ({outcome.describe()}) left {len(now)} items"
    # a read
    if now != was:
        return "read_changed", f"a read changed the history {len(was)} -> {len(now)} items"
    if not outcome.returned:
        return None
    want = was if arg is None else (was[-arg:] if arg > 0 else [])
    got = outcome.value
    if not isinstance(got, list) or keys(got) != want:
        return "wrong_window", (f"get_items(limit={arg}) {outcome.describe()}, expected the "
                                f"newest {len(want)} of {len(was)}")
    return None


async def fault_range(route: Relayed | None, call: Callable[[], Awaitable[Any]],
                      prepare: Callable[[], Awaitable[Any]]) -> dict[str, float]:
    """How many request and reply chunks (with no relay: how many seconds) one unfaulted
    ``call()`` takes once warm, ``prepare()`` run (unmeasured) before each call: the range
    its fault is drawn from."""
    await prepare()
    await call()  # once unmeasured: a first call also prepares statements, caches, tables
    await prepare()
    if route is None:
        started = time.monotonic()
        await call()
        return {"cancel": time.monotonic() - started}
    seen = {}
    for direction in Direction:
        await read_items(route.handle.session, 1)  # a warm connection, as before each step
        route.proxy.arm(Cut(direction, 10**9))
        await call()
        seen[direction] = max(route.proxy.seen, 1)
        route.proxy.disarm()
        await prepare()
    return {"cut-request": seen[Direction.REQUEST], "hold+cancel": seen[Direction.REQUEST],
            "cut-reply": seen[Direction.REPLY]}


async def next_call_problem(hit: Any, observer: Any) -> tuple[str, str, bool] | None:
    """The session serves the next call after a fault: a read through the instance that was
    hit succeeds and shows what a fresh instance shows (this also brings the next fault
    inside the next call rather than inside a reconnection). A problem is (mode, text,
    whether the read raised)."""
    try:
        seen = await read_items(hit)
    except Exception as exc:  # noqa: BLE001 - a session that stays broken is evidence
        return "not_recovered", f"the first call after the fault raised {describe(exc)}", True
    fresh = await read_items(observer)
    if keys(seen) != keys(fresh):
        return "not_recovered", (f"after the fault the instance that was hit reads "
                                 f"{len(seen)} items, a fresh one {len(fresh)}"), False
    return None


def draw(rng: random.Random, kind: str, span: float) -> Fault:
    """The fault of one step. A relay fault often hits the last chunk of its kind, the one
    that commits or whose reply says it did (a lost reply: three times in four, a request:
    every other time), else one drawn among ``span``; a cancellation comes at a moment within
    ``span`` seconds, a quarter of them before the call's first suspension."""
    if kind != "cancel":
        last = int(span) - 1
        bias = 0.75 if kind == "cut-reply" else 0.5
        return Fault(kind, skip=last if rng.random() < bias else rng.randrange(int(span)))
    return Fault(kind, delay_s=0.0 if rng.random() < 0.25 else rng.random() * span)


async def run_trial(ctx: TrialContext) -> Trial:
    """One trial: every operation under every fault kind, each call judged all or nothing.

    Long (over 80 lines) on purpose: the trial is one scenario read top to bottom, and its
    concurrent tasks are closures over the trial's state; split up, that state would be
    threaded through every helper.
    """
    rounds = ctx.params["rounds"]
    query = {"max_connections": "1"} if ctx.target.service == "redis" else {}
    async with relayed(ctx, **query) as route:
        hit = route.handle.session if route is not None else (await ctx.open()).session
        observer = (await ctx.open()).session
        tag = f"{ctx.seed:016x}"
        made = iter(range(10**6))

        def batch(size: int) -> list[dict[str, str]]:
            return [{"role": "user", "content": f"{tag}-{next(made)}"} for _ in range(size)]

        calls: dict[str, Callable[[Any], Awaitable[Any]]] = {
            "add": hit.add_items, "pop": lambda _: hit.pop_item(),
            "read": lambda limit: read_items(hit, limit), "clear": lambda _: hit.clear_session(),
        }
        ctx.log("calibrate: add_items(2 items), get_items(limit=2), pop_item(), clear_session() "
                "on the instance to be hit, each once to warm up and then counting "
                + ("chunks through the relay" if route is not None else "seconds"))
        seeds = batch(3)
        try:

            async def refill() -> None:  # pops and clears are measured on a full session
                await observer.add_items(batch(2))

            ranges = {"add": await fault_range(route, lambda: calls["add"](batch(2)), refill),
                      "read": await fault_range(route, lambda: calls["read"](2), refill),
                      "pop": await fault_range(route, lambda: calls["pop"](None), refill),
                      "clear": await fault_range(route, lambda: calls["clear"](None), refill)}
            await observer.clear_session()
            ctx.log(f"observer: add_items({len(seeds)} seed items); fault ranges {ranges}")
            await observer.add_items(seeds)
        except Exception as exc:  # noqa: BLE001 - a store that cannot be used is evidence
            return Trial(ctx.index, ctx.seed, True, Counts(raised=1), mode="setup_failed",
                         sample=f"setup raised {describe(exc)}", ops=tuple(ctx.ops))
        # Three faulted calls per operation and round on every lane: one per fault kind on a
        # server lane, three cancellations on a file lane.
        kinds = SERVER_FAULTS if route is not None else ("cancel",) * len(SERVER_FAULTS)
        plan = [(op, kind) for op in calls for kind in kinds] * rounds
        ctx.rng.shuffle(plan)
        problems: list[tuple[str, str]] = []
        counts = Counts()
        for step, (op, kind) in enumerate(plan):
            fault = draw(ctx.rng, kind, ranges[op][kind])
            try:
                before = await read_items(observer)
                if len(before) < 2:
                    ctx.log(f"step {step}: observer: add_items(2 items)  # to pop and read")
                    await observer.add_items(batch(2))
                    before = await read_items(observer)
                arg: Any = None
                if op == "add":
                    arg = batch(ctx.rng.randint(1, 3))
                elif op == "read":
                    arg = ctx.rng.choice([None, 1, max(len(before), 1), len(before) + 2])
                running = asyncio.all_tasks()
                outcome = await call_under(fault, route, functools.partial(calls[op], arg))
                after = await read_items(observer)
                settled, waited = after, f"{SETTLE_S}s later"
                if "cancel" in kind:
                    if route is None:  # all of the call's work is in this process
                        rest = await at_rest(running, SETTLE_S)
                        waited = f"once {rest.describe()}"
                    else:  # the server may still run the request: real time
                        await anyio.sleep(SETTLE_S)
                    settled = await read_items(observer)
                shown = f"({len(arg)} items)" if op == "add" else f"(limit={arg})" * (op == "read")
                ctx.log(f"step {step}: {op}{shown} under [{fault.describe()}]: "
                        f"{outcome.describe()}{'' if outcome.fired else ' (fault did not fire)'}; "
                        f"history {len(before)} -> {len(after)} items"
                        + (f"; read again {waited}" if "cancel" in kind else ""))
                problem = judge_call(op, arg, before, after, outcome)
                raised = False  # whether the problem is a call that had to succeed and raised
                if problem is None and keys(settled) != keys(after):
                    problem = ("landed_after_return", f"{op} ended ({outcome.describe()}) with "
                               f"{len(after)} items; {waited} there were {len(settled)}")
                if problem is None and op == "add" and keys(settled) == keys(before):
                    ctx.log(f"step {step}: the batch is absent; retry add_items once, no fault")
                    try:
                        await hit.add_items(arg)
                        retried = await read_items(observer)
                        if keys(retried) != keys(before) + keys(arg):
                            problem = ("retry_not_once", f"after one retry the history is "
                                       f"{first_differences(list(before) + list(arg), retried)}")
                    except Exception as exc:  # noqa: BLE001 - a retry that fails is evidence
                        problem = ("not_recovered", f"retry add_items raised {describe(exc)}")
                        raised = True
                if problem is None:
                    next_call = await next_call_problem(hit, observer)
                    if next_call is not None:
                        problem, raised = (next_call[0], next_call[1]), next_call[2]
                if problem is not None:
                    problems.append(problem)
                    want = list(before) + list(arg) if op == "add" else list(before)
                    counts = counts + tally(want, settled) + (
                        Counts(raised=1) if raised else Counts(wrong_result=1))
            except Exception as exc:  # noqa: BLE001 - a store that cannot be read after a fault
                # e.g. a cancelled call that made the pool replace the one connection of an
                # in-memory store: the history is gone, and nothing after can be judged
                ctx.log(f"step {step}: reading the store after {op} under "
                        f"[{fault.describe()}] raised {describe(exc)}")
                problems.append(("store_unreadable", f"after {op} under [{fault.describe()}] "
                                 f"the store could not be read: {describe(exc)}"))
                counts = counts + Counts(raised=1)
                break

        ctx.log("instance that was hit: add_items([final]); get_items() on both instances")
        final = batch(1)
        try:
            await hit.add_items(final)
            seen_hit, seen_fresh = await read_items(hit), await read_items(observer)
            if keys(seen_hit) != keys(seen_fresh) or keys(seen_fresh)[-1:] != keys(final):
                problems.append(("not_recovered", f"after the faults the instance that was hit "
                                 f"reads {len(seen_hit)} items, a fresh one {len(seen_fresh)}"))
        except Exception as exc:  # noqa: BLE001 - a session that stays broken is evidence
            problems.append(("not_recovered", f"after the faults the instance that was hit "
                             f"raised {describe(exc)}"))
            counts = counts + Counts(raised=1)
    if not problems:
        return Trial(ctx.index, ctx.seed, False, counts, mode="exact", ops=tuple(ctx.ops))
    return Trial(ctx.index, ctx.seed, True, counts, mode=problems[0][0],
                 sample="; ".join(why for _, why in problems[:2])[:400], ops=tuple(ctx.ops))


CHECK = CheckSpec(
    id="ARIB-NET-001",
    invariant="a call whose connection fails in flight (or whose caller gives up on it) takes "
    "effect wholly or not at all, at most once, and settled when it ends: a batch is never "
    "torn, twice, or lost after an acknowledgement; a pop removes at most the newest item; "
    "and the session answers the next call (it does not hang)",
    fault="every operation (append, pop, limit read, clear) under every fault kind, in seeded "
    "order, each hit at a seeded point inside the call: a relay of our own cuts the "
    "connection at the k-th request or reply chunk, or holds a request while the caller "
    "cancels (server lanes; redis-py pool of one); the caller cancels at a seeded moment "
    "(file lanes); drawn among the chunks, or within the time, an unfaulted call takes",
    params=(
        # Four trials of one round rather than two of two: the same draws, but a race that
        # fails at a middling rate shows as some violating trials, not as a verdict that two
        # runs of the same code draw either way (0/2 and 2/2 were both seen on
        # encrypted-sqlalchemy-sqlite), which the regression gate would call a change.
        Param("rounds", 1, 1, 20, "times each (operation, fault kind) pair is drawn per trial"),
        trials_param(4),
    ),
    run_trial=run_trial,
    mutants=(
        "reference_add_after_cancel_lands_later",
        "reference_pop_takes_two_on_retry",
        "redis_add_reports_success_on_connection_error",
        "redis_pop_retries_blindly",
        "postgres_add_swallows_connection_error",
    ),
    generated=(
        Selector("reference", "ReferenceSession.add_items", "early_return"),
        Selector("reference", "ReferenceSession.pop_item", "early_return"),
        Selector("reference", "ReferenceSession.clear_session", "early_return"),
    ),
    timeout_s=120.0,
    hang_invariant=True,
)
