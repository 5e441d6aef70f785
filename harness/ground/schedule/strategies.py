"""How a scheduler picks the next actor among the ready ones: one small class per strategy,
all registered in ``STRATEGIES``.

A strategy sees the ready actors (their numbers, in start order) and the step (1 for the
first decision of the trial) and returns one of them; it is made from a seed and parameters
only, so the same seed and the same ready sets give the same decisions.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar

from arib.ground.schedule.record import Decision, Schedule, ScheduleError


class Strategy:
    """Base: picks among ready actors; ``spawned`` tells it of each new actor."""

    name: ClassVar[str] = ""
    # Parameters it takes, with their defaults and allowed ranges.
    defaults: ClassVar[Mapping[str, int]] = {}
    ranges: ClassVar[Mapping[str, tuple[int, int]]] = {}

    def __init__(self, seed: int, params: Mapping[str, int] | None = None) -> None:
        self.seed = seed
        self.params = {**self.defaults, **(params or {})}
        for key, value in self.params.items():
            low, high = self.ranges.get(key, (0, 1 << 31))
            if key == "s":  # the text form's seed
                raise ScheduleError(f"strategy {self.name!r}: no parameter may be named 's'")
            if key not in self.defaults or not low <= value <= high:
                takes = ", ".join(f"{k} in {lo}..{hi}" for k, (lo, hi) in self.ranges.items())
                raise ScheduleError(f"strategy {self.name!r} parameter {key}={value!r}: it "
                                    f"takes {takes or 'no parameters'}")
        self.rng = random.Random(seed)

    def spawned(self, actor: int) -> None:
        """A new actor started (numbered in start order)."""

    def choose(self, ready: Sequence[int], step: int,
               order: Sequence[int] | None = None) -> int:
        """The actor to release now, one of ``ready`` (sorted, never empty); ``order``: the
        same actors in the order they became ready, oldest first."""
        raise NotImplementedError

    def wanted(self, step: int) -> int | None:
        """The actor this strategy means to release at ``step`` whatever the timing (a
        replay's recorded actor), so the scheduler waits for it; None: no such wish."""
        return None

    def together(self, parked: Sequence[int], pick: int, step: int) -> tuple[int, ...]:
        """Thread actors to release at once with ``pick`` (``parked``: the thread actors
        ready at this decision, ``pick`` among them): they then race for real, in the C code
        no interposition point divides (an uncontrolled decision). None by default."""
        return ()


class RandomWalk(Strategy):
    """Uniform among the ready actors at every decision; with ``w`` > 0, in ``w`` percent of
    the decisions uniform among those other than the last one released (when there are):
    schedules that switch often, where a check-then-act race is one switch at every await;
    with ``g`` > 0, a decision that picks a thread actor releases every parked thread actor
    with it in ``g`` percent of the decisions where two or more are parked (races inside one
    C call: a shared sqlite3 connection without its lock)."""

    name = "random"
    defaults = {"g": 0, "w": 0}
    ranges = {"g": (0, 100), "w": (0, 100)}

    def __init__(self, seed: int, params: Mapping[str, int] | None = None) -> None:
        super().__init__(seed, params)
        self.last: int | None = None

    def choose(self, ready: Sequence[int], step: int,
               order: Sequence[int] | None = None) -> int:
        pool = ready
        if self.params["w"] and self.rng.randrange(100) < self.params["w"]:
            pool = [a for a in ready if a != self.last] or ready
        self.last = pool[self.rng.randrange(len(pool))]
        return self.last

    def together(self, parked: Sequence[int], pick: int, step: int) -> tuple[int, ...]:
        g = self.params["g"]
        if g and len(parked) > 1 and pick in parked and self.rng.randrange(100) < g:
            return tuple(a for a in parked if a != pick)
        return ()


class Fifo(Strategy):
    """The event loop's own order: the actor that became ready first goes first (what an
    unscheduled trial of a pure-asyncio lane does), and thread actors parked together run
    together, as free threads would; a concurrent check's first trial runs it by default, so
    that the order a check was written against is always among its trials."""

    name = "fifo"

    def choose(self, ready: Sequence[int], step: int,
               order: Sequence[int] | None = None) -> int:
        return order[0] if order else ready[0]

    def together(self, parked: Sequence[int], pick: int, step: int) -> tuple[int, ...]:
        # threads that are all ready run at once, as free threads would (uncontrolled)
        return tuple(a for a in parked if a != pick) if pick in parked else ()


class PCT(Strategy):
    """Probabilistic concurrency testing (Burckhardt et al., ASPLOS 2010): every actor gets a
    random priority above ``d``; the highest-priority ready actor runs; at each of ``d - 1``
    change points, drawn among steps 1..k, the actor that runs that step drops to a priority
    below every initial one (the j-th to ``d - j``). A bug of depth d among n actors and k
    steps is hit with probability at least 1/(n * k^(d-1)) per trial."""

    name = "pct"
    defaults = {"d": 2, "k": 50}
    ranges = {"d": (1, 16), "k": (1, 1_000_000)}

    def __init__(self, seed: int, params: Mapping[str, int] | None = None) -> None:
        super().__init__(seed, params)
        d, k = self.params["d"], self.params["k"]
        points = self.rng.sample(range(1, k + 1), min(d - 1, k))
        self.change: dict[int, int] = {step: j for j, step in enumerate(sorted(points), 1)}
        self.priority: dict[int, float] = {}

    def spawned(self, actor: int) -> None:
        self.priority[actor] = self.params["d"] + self.rng.random()

    def choose(self, ready: Sequence[int], step: int,
               order: Sequence[int] | None = None) -> int:
        pick = max(ready, key=lambda a: self.priority.setdefault(a, self.params["d"]))
        if step in self.change:
            self.priority[pick] = self.params["d"] - self.change[step]
        return pick


class Exhaustive(Strategy):
    """Bounded exhaustive enumeration: follows ``prefix`` (from a ``DfsExplorer``), then the
    lowest-numbered ready actor; trial i of a check explores the i-th schedule in
    depth-first order."""

    name = "dfs"
    defaults = {"i": 0}
    ranges = {"i": (0, 1 << 31)}

    def __init__(self, seed: int, params: Mapping[str, int] | None = None,
                 prefix: Sequence[int] = ()) -> None:
        super().__init__(seed, params)
        self.prefix = tuple(prefix)

    def choose(self, ready: Sequence[int], step: int,
               order: Sequence[int] | None = None) -> int:
        if step <= len(self.prefix) and self.prefix[step - 1] in ready:
            return self.prefix[step - 1]
        return ready[0]

    def wanted(self, step: int) -> int | None:
        return self.prefix[step - 1] if step <= len(self.prefix) else None


class Replay(Strategy):
    """Follows a recorded schedule's decisions; where the recorded actor is not ready (an
    uncontrolled lane's timing differs), and past the record, the recorded strategy (same
    seed and parameters) decides."""

    name = "replay"

    def __init__(self, recorded: Schedule) -> None:
        super().__init__(recorded.seed)
        self.recorded = recorded
        self.fallback = make(recorded.strategy, recorded.seed, recorded.params)
        self.diverged = 0

    def spawned(self, actor: int) -> None:
        self.fallback.spawned(actor)

    def choose(self, ready: Sequence[int], step: int,
               order: Sequence[int] | None = None) -> int:
        fallback = self.fallback.choose(ready, step, order)  # keeps its stream in step
        want = self.wanted(step)
        if want is not None and want in ready:
            return want
        self.diverged += 1
        return fallback

    def wanted(self, step: int) -> int | None:
        if step <= len(self.recorded.decisions):
            return self.recorded.decisions[step - 1].actor
        return None

    def together(self, parked: Sequence[int], pick: int, step: int) -> tuple[int, ...]:
        if step <= len(self.recorded.decisions):
            group = self.recorded.decisions[step - 1].actors
            if group[0] == pick and all(a in parked for a in group):
                return group[1:]
            return ()
        return self.fallback.together(parked, pick, step)


STRATEGIES: dict[str, type[Strategy]] = {
    s.name: s for s in (RandomWalk, Fifo, PCT, Exhaustive)}


def make(name: str, seed: int, params: Mapping[str, int] | None = None) -> Strategy:
    """The strategy registered as ``name``; ScheduleError naming it and the known ones."""
    if name not in STRATEGIES:
        raise ScheduleError(f"unknown schedule strategy {name!r}: known are "
                            f"{', '.join(sorted(STRATEGIES))}")
    return STRATEGIES[name](seed, params)


@dataclass
class DfsExplorer:
    """Depth-first enumeration of a trial's schedules across trials: each trial follows the
    next unexplored prefix; ``exhausted`` once every branch of the decision tree was taken.
    The tree is only as exact as the trials are alike: every trial runs the same seed."""

    prefix: tuple[int, ...] = ()
    explored: int = 0
    exhausted: bool = False

    def strategy(self, seed: int) -> Exhaustive:
        """The strategy of the next trial."""
        return Exhaustive(seed, {"i": self.explored}, self.prefix)

    def done(self, decisions: Sequence[Decision], ready_sets: Sequence[Sequence[int]]) -> None:
        """Take a finished trial's decisions and ready sets; move to the next prefix."""
        self.explored += 1
        taken = tuple(d.actor for d in decisions)
        for j in range(len(taken) - 1, -1, -1):
            later = [a for a in sorted(ready_sets[j]) if a > taken[j]]
            if later:
                self.prefix = (*taken[:j], later[0])
                return
        self.exhausted = True
