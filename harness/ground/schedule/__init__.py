"""Seeded schedules for a trial's concurrent actors: record, replay, explore (issue 36).

Standard library only; the check-facing helpers that start actors are in ``checks.base``.
"""

from harness.ground.schedule.driver import as_actor, current_actor, drive
from harness.ground.schedule.plan import SchedulePlan, TrialPlanner, activated, check_replay
from harness.ground.schedule.record import Decision, Schedule, ScheduleError, parse_argument
from harness.ground.schedule.scheduler import Scheduler
from harness.ground.schedule.strategies import STRATEGIES, DfsExplorer, Strategy, make
from harness.ground.schedule.threads import (
    SchedLock,
    active,
    adopt,
    point,
    run_part,
    start_thread_actor,
)

__all__ = [
    "STRATEGIES", "Decision", "DfsExplorer", "SchedLock", "Schedule", "ScheduleError",
    "SchedulePlan", "Scheduler", "Strategy", "TrialPlanner", "activated", "active",
    "adopt", "as_actor", "check_replay", "current_actor", "drive", "make", "parse_argument",
    "point", "run_part", "start_thread_actor",
]
