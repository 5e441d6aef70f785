"""What the LangGraph cancellation checks (ARIB-LGCANCEL-001 on savers, ARIB-LGSTORE-009 on
stores) share: running a call cancelled at its k-th suspension, and judging one cancellation
point from what the caller and a fresh instance read after it.

The cancelled call runs with psycopg's busy clock pinned (``arib.checks._suspend.BUSY_CLOCKS``):
psycopg yields to the loop after a step that needed no I/O only when the loop was busy long
enough, so on a loaded machine a call has suspensions an idle one lacks, and a cancellation at
one of them (AsyncPostgresSaver's aput at langgraph-checkpoint-postgres 1.0.0, in psycopg's
pipeline entry) left later writes uncommitted in none of 8 trials idle and in 4 of 4 beside CI.
Pinned, every such step yields on every machine.

A point's judging, in order: the caller's own read (hung: ``hung_after_cancel``; raised: the
check's ``poisoned`` mode); a fresh instance's read, where one can open the store, must agree
(``divergent_view``); neither may see the operation half done (``partial``); a call that
returned must be done (``lost``); the caller retries what it saw undone, then does one more
operation (hung or raised as before); a last read must show both (``<how it ended>_then_once``,
else ``_then_lost``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any

import anyio

from arib.checks._suspend import (
    at_suspension,
    busy_clocks_loaded,
    busy_yields_pinned,
    cancel_current,
)
from arib.checks.base import describe
from arib.ground.model import Counts

HELD = ("returned_then_once", "absent_then_once", "present_then_once")
SETUP_FAILED = "setup_failed"  # a point whose setup raised, before anything was cancelled


async def cancelled_at(make: Callable[[], Awaitable[Any]], k: int
                       ) -> tuple[str, int, BaseException | None]:
    """Run ``make()`` in its own task cancelled just before its k-th suspension (0: never):
    how it ended ('returned', 'cancelled' or 'raised'), the suspensions it made, and what it
    raised. The call runs with the client libraries' busy clocks pinned
    (``busy_yields_pinned``), so that its suspensions do not depend on the machine's load."""
    seen = [0]

    async def run() -> None:
        await at_suspension(make(), k, cancel_current, seen)

    with busy_yields_pinned():
        task = asyncio.ensure_future(run())
        await asyncio.wait({task})
    if task.cancelled():
        return "cancelled", seen[0], None
    error = task.exception()
    return ("raised" if error else "returned"), seen[0], error


def pinned_note() -> str:
    """What the trial's log says of the busy clocks pinned in each cancelled call."""
    loaded = busy_clocks_loaded()
    return ("in each cancelled call the busy clock " + ", ".join(loaded) + " reads as overdue "
            "(every step yields, as on a loaded machine)" if loaded else
            "no client library with a busy clock is loaded: nothing pinned")


@dataclass(frozen=True)
class Words:
    """How a check names, in its modes and notes, what it cancelled and read."""

    poisoned: str  # the mode of a caller whose object fails after the cancellation
    read: str  # the caller's read ("list", "read")
    partial: str  # what a half-done operation is ("half there", "half done")
    undone: str  # what a returned but undone operation is ("absent", "undone")
    next_op: str  # the operation after the retry ("next op", "next put")


@dataclass(frozen=True)
class Point:
    """One cancellation point's reads and retry, each through the check's own objects."""

    where: str  # "<op> k=<k>: <how it ended>", the start of every note
    ended: str  # 'returned', 'cancelled' or 'raised'
    own: Callable[[], Awaitable[str]]  # the caller's read: 'present', 'absent' or 'partial'
    fresh: Callable[[], Awaitable[str]] | None  # a fresh instance's, where one opens the store
    redo: Callable[[str], Awaitable[None]]  # given what the caller saw: retry, then one more
    final: Callable[[], Awaitable[tuple[bool, str]]]  # (both there, what the last read showed)


async def judge_point(point: Point, words: Words, notes: list[str],
                      timeout_s: float) -> str:
    """The mode of one cancellation point (see the module's note); a violation's note is
    appended to ``notes``."""
    where = point.where
    try:
        own = await point.own()
    except TimeoutError:
        notes.append(f"{where}; the caller's next {words.read} hung")
        return "hung_after_cancel"
    except Exception as exc:  # noqa: BLE001 - what the backend raised is evidence
        notes.append(f"{where}; the caller's next {words.read} raised {describe(exc)}")
        return words.poisoned
    if point.fresh is not None:
        other = await point.fresh()
        if other != own:
            notes.append(f"{where}; the caller sees it {own}, a fresh instance {other}")
            return "divergent_view"
    if own == "partial":
        notes.append(f"{where}; it is {words.partial}")
        return "partial"
    if point.ended == "returned" and own == "absent":
        notes.append(f"{where}; it returned but is {words.undone}")
        return "lost"
    try:
        with anyio.fail_after(timeout_s):
            await point.redo(own)
    except TimeoutError:
        notes.append(f"{where}; saw it {own}; the retry or the {words.next_op} hung")
        return "hung_after_cancel"
    except Exception as exc:  # noqa: BLE001
        notes.append(f"{where}; saw it {own}; the retry or {words.next_op} raised "
                     f"{describe(exc)}")
        return words.poisoned
    both, shown = await point.final()
    ended_as = "returned" if point.ended == "returned" else own
    if both:
        return f"{ended_as}_then_once"
    notes.append(f"{where}; saw it {own}; {shown}")
    return f"{ended_as}_then_lost"


def point_counts(modes: Iterable[str], words: Words) -> Counts:
    """The counts of a trial's points, one per violated point: a call that raised (the setup,
    or the caller's object after the cancellation: ``words.poisoned``) as ``raised``; any
    other violation (a hang, a divergent, partial or lost operation) as ``wrong_result``."""
    bad = [mode for mode in modes if mode not in HELD]
    raised = sum(mode in (SETUP_FAILED, words.poisoned) for mode in bad)
    return Counts(wrong_result=len(bad) - raised, raised=raised)
