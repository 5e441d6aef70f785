"""The actors of a trial as its scheduler sees them: where each is (on the loop, in a thread)
and what it waits for."""

from __future__ import annotations

import asyncio
import enum
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from arib.ground.schedule.waits import Wait

if TYPE_CHECKING:
    from arib.ground.schedule.scheduler import Scheduler


class Phase(enum.Enum):
    """Where an actor is, seen from the event loop."""

    NEW = "new"  # started, its task has not run yet
    RUNNING = "running"  # granted: its step runs
    WAITING = "waiting"  # suspended on what it awaited
    READY = "ready"  # what it awaited is done: waits for its turn
    DONE = "done"


class PartPhase(enum.Enum):
    """Where the thread side of an actor is."""

    RUNNING = "running"
    PARKED = "parked"  # at an interposition point: ready for its turn
    BLOCKED = "blocked"  # waits for a wrapped lock another actor holds


@dataclass(eq=False)
class Part:
    """The thread side of an actor: a thread actor's thread, or a task actor's hand-off."""

    actor: Actor
    sched: Scheduler
    phase: PartPhase = PartPhase.RUNNING
    since: float = field(default_factory=time.monotonic)
    grant: threading.Event = field(default_factory=threading.Event)
    escaped: bool = False  # ran past its settle time: runs unscheduled until its next point
    blocked_on: object | None = None
    forced: bool = False  # granted to take a lock the scheduler could not see released
    held: int = 0  # wrapped locks it holds (no interposition point stops it meanwhile)


@dataclass(eq=False)
class Actor:
    """One actor of a trial, numbered in start order."""

    id: int
    label: str
    thread: bool = False
    process: bool = False  # a forked process its check releases op by op (``decide``)
    phase: Phase = Phase.NEW
    wait: Wait = Wait.NONE
    turn: asyncio.Future[None] | None = None
    part: Part | None = None
    free: bool = False  # cancelled or released: no longer scheduled
    ready_seq: int = 0  # when it last became ready (a counter): the loop's own order
    wake_at: float | None = None  # virtual time it sleeps until
    since: float = 0.0  # when it began its current wait (monotonic)
    epoch: int = 0  # decisions taken when it began it
    due: float | None = None  # when the real-time timer it waits for fires (monotonic)
