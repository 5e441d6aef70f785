"""How a check's trials are scheduled: the strategy a check declares, the strategy of each
trial (a replay's recorded one, the next schedule of an enumeration, PCT's step estimate), and
the activation of a trial's scheduler on the running loop."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from arib.ground.schedule import threads
from arib.ground.schedule.driver import task_factory
from arib.ground.schedule.record import Schedule, ScheduleError
from arib.ground.schedule.scheduler import SETTLE_S, Scheduler
from arib.ground.schedule.strategies import DfsExplorer, Replay, Strategy, make


@dataclass(frozen=True)
class SchedulePlan:
    """A concurrent check's schedule: its strategy and parameters (e.g. PCT's depth ``d``),
    how long a decision waits for outside completions, and how the check's timers run
    (``virtual``: actors sleep on the scheduler's clock; ``real``: the backend or a server
    needs real time; ``none``: it sets none)."""

    strategy: str = "random"
    params: Mapping[str, int] = field(default_factory=dict)
    settle_s: float = SETTLE_S
    timers: str = "none"
    # The strategy of each run's first trial: by default the loop's own order, so that the
    # interleaving a check was written against is always among its trials ("": ``strategy``).
    first: str = "fifo"

    def validate(self, owner: str) -> None:
        """ScheduleError naming ``owner`` when the strategy or a parameter is unknown."""
        try:
            make(self.strategy, 0, self.params)
            if self.first:
                make(self.first, 0)
        except ScheduleError as exc:
            raise ScheduleError(f"{owner}: {exc}") from None
        if self.timers not in ("virtual", "real", "none"):
            raise ScheduleError(f"{owner}: timers={self.timers!r}: say 'virtual', 'real' or "
                                f"'none'")

    def to_json(self) -> dict[str, Any]:
        """The JSON form of this plan."""
        return {"strategy": self.strategy, "params": dict(self.params),
                "settle_s": self.settle_s, "timers": self.timers, "first": self.first}


class TrialPlanner:
    """The strategy of each trial of one run: a replay's, else the plan's."""

    def __init__(self, plan: SchedulePlan, replay: Schedule | None = None) -> None:
        self.plan = plan
        self.replay = replay
        self.explorer = DfsExplorer() if plan.strategy == "dfs" and replay is None else None
        self._steps: int | None = None

    @property
    def same_seed(self) -> bool:
        """An enumeration runs every trial on the first trial's seed (one program, many
        schedules)."""
        return self.explorer is not None

    @property
    def exhausted(self) -> bool:
        """Every schedule of an enumeration was explored."""
        return self.explorer is not None and self.explorer.exhausted

    def scheduler(self, seed: int, index: int = 0) -> Scheduler:
        """A scheduler for trial ``index``, seeded with ``seed``."""
        strategy: Strategy
        if self.replay is not None:
            strategy = Replay(self.replay)
        elif self.explorer is not None:
            strategy = self.explorer.strategy(seed)
        elif index == 0 and self.plan.first:
            strategy = make(self.plan.first, seed)
        else:
            params = dict(self.plan.params)
            if self.plan.strategy == "pct" and self._steps:
                params["k"] = self._steps  # the previous trial's decisions estimate k
            strategy = make(self.plan.strategy, seed, params)
        return Scheduler(strategy, settle_s=self.plan.settle_s,
                         virtual_timers=self.plan.timers == "virtual")

    def done(self, sched: Scheduler) -> None:
        """Learn from a finished trial; a replay that names actors or steps this trial does
        not have raises ScheduleError."""
        if sched.decisions:
            self._steps = len(sched.decisions)
        if self.explorer is not None:
            self.explorer.done(sched.decisions, sched.ready_sets)
        if self.replay is not None:
            check_replay(self.replay, sched.record())


def check_replay(recorded: Schedule, made: Schedule) -> None:
    """ScheduleError when ``recorded`` and its replay were both wholly controlled and it names
    an actor the trial never started, or more or fewer decisions than the trial took. (Where
    a thread or a server decided some of them, a replay may start other child actors and take
    other decisions: it did not reproduce, which the replay's report says; no refusal.)"""
    if recorded.uncontrolled or made.uncontrolled:
        return
    started = len(made.actors)
    named = max((a for d in recorded.decisions for a in d.actors), default=-1)
    text = recorded.text()
    shown = text if len(text) <= 60 else text[:57] + "..."
    if named >= started:
        raise ScheduleError(f"schedule {shown!r} names actor {named}, but this trial started "
                            f"{started} actor(s) (0 to {started - 1}): it is not a schedule of "
                            f"this check, lane and seed; use the replay command its finding "
                            f"printed")
    if len(recorded.decisions) != len(made.decisions):
        raise ScheduleError(f"schedule {shown!r} has {len(recorded.decisions)} decisions, but "
                            f"this trial took {len(made.decisions)}, every one controlled: it "
                            f"is not a schedule of this check, lane and seed; use the replay "
                            f"command its finding printed")


@contextlib.contextmanager
def activated(sched: Scheduler) -> Iterator[Scheduler]:
    """Run a trial under ``sched``: bound to the running loop, its executor the loop's
    default, sqlite3 connections opened meanwhile interposed."""
    loop = asyncio.get_running_loop()
    loop.set_default_executor(threads.executor())
    previous = loop.get_task_factory()
    loop.set_task_factory(task_factory(sched, previous))
    sched.activate()
    threads._ACTIVE.append(sched)  # noqa: SLF001 - this module owns activation
    try:
        with threads.interpose_sqlite():
            yield sched
    finally:
        threads._ACTIVE.remove(sched)  # noqa: SLF001
        loop.set_task_factory(previous)
        sched.deactivate()
