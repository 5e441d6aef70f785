"""The scheduler of one trial: its actors run one at a time, in the order a strategy picks.

Works on any event loop (asyncio's, uvloop) because it acts at the coroutine level: each task
actor's coroutine is driven by ``drive`` (``yield from`` style), which gives up the running
token at every suspension and, once what it awaited is done, waits for a turn the scheduler
grants. A thread actor, or the worker thread a task actor handed work to, stops at
interposition points (``threads.point``: an sqlite3 call, a wrapped lock) and waits for its
grant the same way. A conductor task takes every decision once the loop has settled: no actor
running, a few loop rounds with no change (one once asyncio's loop has no callback ready),
and every completion that comes from outside the actors (a worker thread's result, a socket's
reply) arrived, waited for up to ``settle_s``. A decision taken while such a completion was
still outstanding, or while a thread ran past its settle time, is recorded as uncontrolled.
"""

from __future__ import annotations

import asyncio
import collections
import threading
import time
import weakref
from typing import Any

from arib.ground.schedule.actors import Actor, Part, PartPhase, Phase
from arib.ground.schedule.record import Decision, Schedule
from arib.ground.schedule.strategies import Replay, Strategy
from arib.ground.schedule.waits import Wait

SETTLE_S = 0.05  # the longest a decision waits for outside completions before it goes
# uncontrolled; it waits less once it knows how long they take here: LATENCY_FACTOR times the
# slowest of the last completions, at least MIN_WAIT_S (a timer: until it is due)
LATENCY_FACTOR = 4.0
MIN_WAIT_S = 0.002
TIMER_SLACK_S = 0.002
VIRTUAL_STEP_S = 0.0001  # virtual time one decision takes: a sleep of 10 ms lasts 100 steps
QUIET_ROUNDS = 3  # loop rounds with no change before a decision (one, on an asyncio loop
# with no callback ready: ``_idle``)
REPLAY_WAIT_S = 1.0  # how long a replay waits for its recorded actor to become ready
MAX_DECISIONS = 500_000  # past this the scheduler lets every actor run free (a livelock guard)


class Scheduler:
    """Runs a trial's actors one at a time in the order ``strategy`` picks, and records it."""

    def __init__(self, strategy: Strategy, *, settle_s: float = SETTLE_S,
                 virtual_timers: bool = False) -> None:
        self.strategy = strategy
        self.settle_s = settle_s
        # Actors' asyncio sleeps run on the virtual clock (a check whose timers are virtual).
        self.virtual_timers = virtual_timers
        self.actors: list[Actor] = []
        # The actors that may still be scheduled, in start order: ``actors`` less the done,
        # the free and the process actors, pruned as they leave (none comes back), so that a
        # decision does not scan every actor a long trial started (a backend that runs each
        # call's cleanup as a task of its own starts hundreds).
        self._live: list[Actor] = []
        self.decisions: list[Decision] = []
        self.ready_sets: list[tuple[int, ...]] = []
        self.virtual_now = 0.0
        self.failure: BaseException | None = None
        self._mutex = threading.RLock()
        self._version = 0
        self._holder: Actor | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread = 0
        self._waiter: asyncio.Future[None] | None = None
        self._conductor: asyncio.Task[None] | None = None
        self._uncontrolled_since = False  # something ran unscheduled since the last decision
        self.active = False
        self.actor_tasks: weakref.WeakSet[asyncio.Task[Any]] = weakref.WeakSet()
        self._latencies: collections.deque[float] = collections.deque(maxlen=32)
        self._seq = 0

    # -- life ------------------------------------------------------------------------------

    def activate(self) -> None:
        """Bind to the running loop (call inside it, before the first actor)."""
        self._loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()
        self.active = True

    def deactivate(self) -> None:
        """Stop deciding; every actor still parked or waiting runs free from now on."""
        self.active = False
        if self._conductor is not None and not self._conductor.done():
            self._conductor.cancel()
        self._release_all()

    def is_actor_task(self, obj: object) -> bool:
        """Whether ``obj`` is the task of one of this trial's actors."""
        return isinstance(obj, asyncio.Task) and obj in self.actor_tasks

    def record(self) -> Schedule:
        """This trial's schedule so far."""
        strategy = self.strategy
        labels = tuple(a.label for a in self.actors)
        if isinstance(strategy, Replay):
            rec = strategy.recorded
            return Schedule(rec.strategy, rec.seed, rec.params, tuple(self.decisions), labels,
                            strategy.diverged)
        return Schedule(strategy.name, strategy.seed, dict(strategy.params),
                        tuple(self.decisions), labels)

    # -- task actors (called on the loop thread by drive) -----------------------------------

    def new_actor(self, label: str, *, thread: bool = False) -> Actor:
        """Register an actor (numbered in start order) and make sure a conductor runs."""
        with self._mutex:
            actor = Actor(len(self.actors), label, thread=thread)
            self.actors.append(actor)
            self._live.append(actor)
            self.strategy.spawned(actor.id)
            self._bump()
        self._ensure_conductor()
        return actor

    def new_process(self, label: str) -> Actor:
        """Register a forked writer process as an actor (numbered in start order); its check
        releases it op by op with ``decide`` (the conductor does not run it)."""
        with self._mutex:
            actor = Actor(len(self.actors), label, process=True)
            self.actors.append(actor)
            self.strategy.spawned(actor.id)
            return actor

    def decide(self, ready: list[int]) -> int:
        """A decision among process actors ``ready`` (each waiting for its next op to be
        released, one at a time: controlled); the actor to release."""
        with self._mutex:
            step = len(self.decisions) + 1
            pick = self.strategy.choose(sorted(ready), step)
            self.decisions.append(Decision((pick,)))
            self.ready_sets.append(tuple(sorted(ready)))
            return pick

    def released_together(self, actors: list[int]) -> None:
        """Record that ``actors`` were released at once to run free (uncontrolled)."""
        with self._mutex:
            self.decisions.append(Decision(tuple(actors), controlled=False))
            self.ready_sets.append(tuple(sorted(actors)))

    def turn(self, actor: Actor) -> asyncio.Future[None]:
        """The future an actor whose awaited thing is done waits on for its turn."""
        assert self._loop is not None
        fut: asyncio.Future[None] = self._loop.create_future()
        with self._mutex:
            if actor.free or not self.active:
                fut.set_result(None)
                return fut
            actor.turn = fut
            if (actor.phase is Phase.WAITING and actor.wait is Wait.EXTERNAL
                    and actor.epoch == len(self.decisions)):
                # a completion no decision overtook: how long outside work takes here (one
                # that another actor's step had to unblock first says nothing of that)
                self._latencies.append(time.monotonic() - actor.since)
            actor.phase = Phase.READY
            actor.ready_seq = self._next_seq()
            if self._holder is actor:
                self._holder = None
            self._bump()
        return fut

    def suspended(self, actor: Actor, wait: Wait, delay: float | None = None) -> None:
        """The actor's step ended at a suspension on ``wait`` (a timer: due in ``delay``)."""
        with self._mutex:
            actor.phase = Phase.WAITING
            actor.wait = wait
            actor.since = time.monotonic()
            actor.epoch = len(self.decisions)
            actor.due = actor.since + delay if delay is not None else None
            part = actor.part
            if self._holder is actor and not (part and part.phase is PartPhase.RUNNING):
                self._holder = None
            self._bump()

    def finished(self, actor: Actor) -> None:
        """The actor returned or raised."""
        with self._mutex:
            actor.phase = Phase.DONE
            if self._holder is actor:
                self._holder = None
            self._bump()

    def set_free(self, actor: Actor) -> None:
        """The actor was cancelled: it runs unscheduled from now on."""
        with self._mutex:
            actor.free = True
            if self._holder is actor:
                self._holder = None
            self._uncontrolled_since = True
            self._bump()

    def sleep_virtual(self, actor: Actor, seconds: float) -> None:
        """The actor sleeps ``seconds`` of virtual time: it is ready again once the virtual
        clock (VIRTUAL_STEP_S a decision; jumping ahead when no actor can move) passes."""
        with self._mutex:
            actor.wake_at = self.virtual_now + max(0.0, seconds)
            actor.phase = Phase.WAITING
            actor.wait = Wait.TIMER
            if self._holder is actor:
                self._holder = None
            self._bump()

    # -- thread parts (called from worker threads, except part_started) ---------------------

    def part_started(self, actor: Actor) -> Part:
        """``actor`` runs on in a thread (a hand-off it made, or as a thread actor)."""
        with self._mutex:
            part = Part(actor, self)
            actor.part = part
            self._bump()
            return part

    def park(self, part: Part, blocked_on: object | None = None) -> bool:
        """At an interposition point: give up the turn and wait for the next one (or, with
        ``blocked_on``, until that lock is released). True when the grant forces a lock."""
        with self._mutex:
            if part.actor.free or not self.active:
                return True
            part.phase = PartPhase.BLOCKED if blocked_on is not None else PartPhase.PARKED
            part.blocked_on = blocked_on
            part.actor.ready_seq = self._next_seq()
            part.escaped = part.forced = False
            part.grant.clear()
            if self._holder is part.actor:
                self._holder = None
            self._bump()
        part.grant.wait()
        return part.forced

    def part_ended(self, part: Part) -> None:
        """The thread side finished its work."""
        with self._mutex:
            actor = part.actor
            if actor.part is part:
                actor.part = None
            if actor.thread:
                actor.phase = Phase.DONE
            if self._holder is actor:
                self._holder = None
            if part.escaped:
                self._uncontrolled_since = True
            self._bump()

    def lock_released(self, lock: object) -> None:
        """A wrapped lock was released: the parts blocked on it may try again."""
        with self._mutex:
            for actor in self.actors:
                part = actor.part
                if part is not None and part.blocked_on is lock:
                    part.phase = PartPhase.PARKED
                    part.blocked_on = None
                    actor.ready_seq = self._next_seq()
            self._bump()

    def uncontrolled(self) -> None:
        """Something ran unscheduled (e.g. a second hand-off of one actor): the next decision
        is uncontrolled."""
        with self._mutex:
            self._uncontrolled_since = True

    # -- deciding ---------------------------------------------------------------------------

    def _next_seq(self) -> int:
        self._seq += 1
        return self._seq

    def _bump(self) -> None:
        self._version += 1
        loop = self._loop
        if loop is None:
            return
        if threading.get_ident() == self._loop_thread:
            self._wake()
        else:
            try:
                loop.call_soon_threadsafe(self._wake)
            except RuntimeError:  # the loop is closed: nothing waits any more
                pass

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def _wait_change(self, timeout: float | None) -> None:
        assert self._loop is not None
        waiter = self._waiter = self._loop.create_future()
        handle = (self._loop.call_later(timeout, self._wake) if timeout is not None else None)
        try:
            await waiter
        finally:
            if handle is not None:
                handle.cancel()
            self._waiter = None

    def _ensure_conductor(self) -> None:
        if self._loop is None or not self.active:
            return
        if self._conductor is None or self._conductor.done():
            self._conductor = self._loop.create_task(self._conduct())

    async def _conduct(self) -> None:
        try:
            while self.active:
                found = await self._settle()
                if found is None:
                    return
                ready, controlled = found
                step = len(self.decisions) + 1
                order = sorted(ready, key=lambda a: self.actors[a].ready_seq)
                pick = self.strategy.choose(ready, step, order)
                parked = [a for a in ready if self.actors[a].part is not None]
                others = self.strategy.together(parked, pick, step) if parked else ()
                with self._mutex:
                    self.virtual_now += VIRTUAL_STEP_S
                    controlled = controlled and not self._uncontrolled_since and not others
                    self._uncontrolled_since = False
                    self.decisions.append(Decision((pick, *others), controlled))
                    self.ready_sets.append(tuple(ready))
                    self._grant(self.actors[pick])
                    for other in others:  # they run too, from now to their next point
                        self._release_part(self.actors[other])
                if len(self.decisions) >= MAX_DECISIONS:
                    self.active = False
                    self._release_all()
                    return
        except asyncio.CancelledError:
            raise
        except BaseException as exc:  # noqa: BLE001 - kept for the trial; actors run free
            self.failure = exc
            self.active = False
            self._release_all()

    def _release_part(self, actor: Actor) -> None:
        part = actor.part
        assert part is not None
        part.phase = PartPhase.RUNNING
        part.since = time.monotonic()
        part.grant.set()

    def _grant(self, actor: Actor) -> None:
        self._holder = actor
        part = actor.part
        if part is not None and part.phase is not PartPhase.RUNNING:
            part.phase = PartPhase.RUNNING
            part.since = time.monotonic()
            part.grant.set()
            return
        actor.phase = Phase.RUNNING
        actor.wake_at = None
        if actor.turn is not None and not actor.turn.done():
            actor.turn.set_result(None)

    def _ready(self, actor: Actor) -> bool:
        part = actor.part
        if part is not None:
            return part.phase is PartPhase.PARKED
        return actor.phase is Phase.READY and (actor.wake_at is None
                                               or actor.wake_at <= self.virtual_now)

    def _pending(self, actor: Actor) -> bool:
        """Whether the actor waits for something outside the actors, that will come."""
        part = actor.part
        if part is not None:
            return part.phase is PartPhase.RUNNING and self._holder is not actor
        return actor.phase is Phase.NEW or (
            actor.phase is Phase.WAITING and actor.wake_at is None
            and actor.wait in (Wait.EXTERNAL, Wait.TIMER))

    async def _settle(self) -> tuple[list[int], bool] | None:
        """Wait until the next decision can be taken: the ready actors, and whether the
        decision is controlled; None when no actor is left."""
        controlled = True
        deadline: float | None = None
        quiet, seen = 0, -1
        while True:
            with self._mutex:
                version, holder = self._version, self._holder
            if version != seen:
                seen, quiet = version, 0
            if holder is not None:
                part = holder.part
                if part is not None and part.phase is PartPhase.RUNNING:
                    remaining = part.since + self.settle_s - time.monotonic()
                    if remaining <= 0:  # a thread that does not reach its next point
                        with self._mutex:
                            if self._holder is holder and holder.part is part:
                                part.escaped = True
                                self._holder = None
                                self._uncontrolled_since = True
                                self._bump()
                        continue
                    await self._wait_change(remaining)
                else:
                    await asyncio.sleep(0)
                continue
            if quiet < QUIET_ROUNDS and not (quiet and _idle(self._loop)):
                quiet += 1
                await asyncio.sleep(0)
                continue
            with self._mutex:
                live = self._live = [a for a in self._live
                                     if not a.free and a.phase is not Phase.DONE]
                if not live:
                    return None
                ready = [a.id for a in live if self._ready(a)]
                waiting = [a for a in live if self._pending(a)]
                pending = bool(waiting)
                # A wait that began before the last decision was waited for then, in vain:
                # another actor's step must unblock it first (a database lock it holds).
                # The next decisions do not wait for it again; they are uncontrolled.
                fresh = any(not self._stale(a) for a in waiting)
                # A replay settles as its record did, and waits longer for its recorded
                # actor when that one is on its way.
                want = self.strategy.wanted(len(self.decisions) + 1)
                awaited = (want is not None and want not in ready and want < len(self.actors)
                           and self._pending(self.actors[want]))
                if ready and not fresh and not awaited:
                    return ready, controlled and not pending
                if not ready and not pending:
                    woken = self._wake_sleepers(live) or self._force_blocked(live)
                    if woken:
                        continue
            now = time.monotonic()
            if deadline is None:
                deadline = now + (REPLAY_WAIT_S if awaited else self._patience(live, now))
            if now >= deadline:
                if ready:
                    return ready, controlled and not pending
                controlled = False
                await self._wait_change(self.settle_s)
                continue
            await self._wait_change(deadline - now)

    def _stale(self, actor: Actor) -> bool:
        part = actor.part
        if part is not None:
            return part.escaped
        return actor.phase is Phase.WAITING and actor.epoch < len(self.decisions)

    def _patience(self, live: list[Actor], now: float) -> float:
        """How long to wait for the outstanding outside completions: a few times the slowest
        recent one, at least MIN_WAIT_S, or until a timer is due, at most settle_s."""
        wait = max(MIN_WAIT_S, LATENCY_FACTOR * max(self._latencies, default=self.settle_s))
        for actor in live:
            if actor.part is None and actor.phase is Phase.WAITING and actor.due is not None:
                wait = max(wait, actor.due - now + TIMER_SLACK_S)
        return min(wait, self.settle_s)

    def _wake_sleepers(self, live: list[Actor]) -> bool:
        sleepers = [a for a in live if a.part is None and a.wake_at is not None]
        if not sleepers:
            return False
        self.virtual_now = min(a.wake_at or 0.0 for a in sleepers)
        self._bump()
        return True

    def _force_blocked(self, live: list[Actor]) -> bool:
        """Nothing can move but parts blocked on a wrapped lock the scheduler never saw
        released (its holder is outside the actors): let the first take it for real."""
        blocked = [a for a in live if a.part is not None and a.part.phase is PartPhase.BLOCKED]
        if not blocked or self._holder is not None:
            return False
        part = blocked[0].part
        assert part is not None
        part.forced = True
        part.phase = PartPhase.RUNNING
        part.escaped = True
        self._uncontrolled_since = True
        part.grant.set()
        self._bump()
        return True

    def _release_all(self) -> None:
        with self._mutex:
            for actor in self.actors:
                actor.free = True
                if actor.turn is not None and not actor.turn.done():
                    actor.turn.set_result(None)
                if actor.part is not None:
                    actor.part.grant.set()
            self._holder = None


def _idle(loop: asyncio.AbstractEventLoop | None) -> bool:
    """Whether ``loop`` has no callback ready to run: more quiet rounds would only poll for
    I/O, and what an actor waits for outside is waited for by the patience, not by rounds.
    Known for asyncio's own loops (their ready queue); never for others (uvloop): they
    settle by QUIET_ROUNDS, and decide the same."""
    ready = getattr(loop, "_ready", None)
    return ready is not None and not ready


def describe_actor(label: str, args: tuple[Any, ...]) -> str:
    """A short label for an actor: its function and arguments, e.g. ``writer(3)``."""
    shown = ", ".join(repr(a)[:30] for a in args)
    return f"{label}({shown})"
