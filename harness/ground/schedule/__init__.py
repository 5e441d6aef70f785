"""Seeded schedules for a trial's concurrent actors: record, replay, explore (issue 36).

Standard library only; the check-facing helpers that start actors are in ``arib.checks.base``.
"""

from arib.ground.schedule.driver import as_actor, current_actor, drive
from arib.ground.schedule.plan import SchedulePlan, TrialPlanner, activated, check_replay
from arib.ground.schedule.record import Decision, Schedule, ScheduleError, parse_argument
from arib.ground.schedule.scheduler import Scheduler
from arib.ground.schedule.strategies import STRATEGIES, DfsExplorer, Strategy, make
from arib.ground.schedule.threads import (
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
