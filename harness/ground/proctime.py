"""How long this process has been running, read from the kernel (Linux), for startup figures.

A run records when it started its first child and its first cell counted from the moment the
process itself was started (``/proc/self/stat``), so the interpreter's start and every import
before the harness's first line count too.
"""

from __future__ import annotations

import os

_FIRST_FORK_S: float | None = None
_FORKS = 0  # children forked since the count began (``forget_first_fork``)


def process_age_s() -> float | None:
    """Seconds since this process was started (clock-tick precision, 10 ms on Linux); None
    where the kernel does not say (no ``/proc``)."""
    try:
        with open("/proc/self/stat") as stat:
            # field 22, counted after the command name (which may hold spaces and parentheses)
            ticks = int(stat.read().rsplit(")", 1)[1].split()[19])
        with open("/proc/uptime") as uptime:
            since_boot = float(uptime.read().split()[0])
        return max(0.0, since_boot - ticks / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError):
        return None


def forget_first_fork() -> None:
    """Start counting anew: the next fork is the first (a run in a process that forked
    before it, such as a test session, records its own first child)."""
    global _FIRST_FORK_S, _FORKS
    _FIRST_FORK_S, _FORKS = None, 0


def note_first_fork() -> None:
    """Record, once per process, its age as it forks its first child; count the child."""
    global _FIRST_FORK_S, _FORKS
    _FORKS += 1
    if _FIRST_FORK_S is None:
        _FIRST_FORK_S = process_age_s()


def forks() -> int:
    """How many children this process forked since the count began (``forget_first_fork``)."""
    return _FORKS


def first_fork_s() -> float | None:
    """This process's age when it forked its first child (None: none yet, or no ``/proc``)."""
    return _FIRST_FORK_S

