"""A live progress line on a terminal; elsewhere (CI logs) a summary line every few seconds.

On a terminal the line is redrawn after every unit. Off one, a line per unit would flood the
log (a survey has about a thousand units), so a summary line is printed at most once every
``every_s`` seconds, and a final one when the run ends: how many units, how fast, how long
it should still take, what ended how, and the last unit.
"""

from __future__ import annotations

import os
import sys
import time
from collections import Counter
from collections.abc import Callable
from typing import TextIO

# Off a terminal: at most one summary line this often (seconds); $ARIB_PROGRESS_EVERY_S sets
# it (0: a line per unit, for a tool that follows a run's progress line by line).
SUMMARY_EVERY_S = 10.0
ENV_EVERY = "ARIB_PROGRESS_EVERY_S"


def summary_every_s() -> float:
    """Seconds between summary lines off a terminal: $ARIB_PROGRESS_EVERY_S, else 10."""
    try:
        return max(0.0, float(os.environ.get(ENV_EVERY, SUMMARY_EVERY_S)))
    except ValueError:
        return SUMMARY_EVERY_S


class Progress:
    """Counts finished units of a long run and shows rate, elapsed time and the last item.

    ``total`` may shrink while the run goes on (units found not to be needed); call
    ``finish`` when the run ends (it is also called when ``done`` reaches ``total``).
    """

    def __init__(self, label: str, total: int, stream: TextIO | None = None,
                 quiet: bool = False, every_s: float | None = None,
                 clock: Callable[[], float] = time.perf_counter) -> None:
        self.label = label
        self.total = total
        self.done = 0
        self.stream = stream or sys.stderr
        self.quiet = quiet
        self.live = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.every_s = summary_every_s() if every_s is None else every_s
        self.clock = clock
        self.started = clock()
        self.printed_at = self.started
        self.endings: Counter[str] = Counter()
        self.last = ""
        self.finished = False

    def advance(self, note: str) -> None:
        """One more unit is finished; ``note`` says which and how it ended (after ': ')."""
        self.done += 1
        self.last = note
        self.endings[note.rpartition(": ")[2] if ": " in note else "done"] += 1
        if self.quiet:
            return
        now = self.clock()
        if self.live:
            self.stream.write("\r\x1b[2K" + self._line(now, note)[:160])
            self.stream.flush()
        elif now - self.printed_at >= self.every_s:
            self.printed_at = now
            self.stream.write(self._line(now, self._summary(now)) + "\n")
            self.stream.flush()
        if self.done >= self.total:
            self.finish()

    def finish(self) -> None:
        """The run ended: end the live line, or print the final summary (once)."""
        if self.finished:
            return
        self.finished = True
        if self.quiet or not self.done:
            return
        if self.live:
            self.stream.write("\n")
        else:
            now = self.clock()
            self.stream.write(self._line(now, "finished: " + self._endings()) + "\n")
        self.stream.flush()

    def _line(self, now: float, note: str) -> str:
        elapsed = now - self.started
        rate = self.done / elapsed if elapsed > 0 else 0.0
        return (f"[{self.label}] {self.done}/{self.total} {elapsed:5.1f}s "
                f"{rate:4.1f}/s  {note}")

    def _endings(self) -> str:
        return ", ".join(f"{n} {what}" for what, n in sorted(self.endings.items()))

    def _summary(self, now: float) -> str:
        elapsed = now - self.started
        left = max(self.total - self.done, 0)
        eta = f"about {left * elapsed / self.done:.0f}s left" if self.done else "starting"
        return f"{eta}; so far {self._endings()}; last: {self.last}"
