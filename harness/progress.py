"""A live progress line on a terminal, plain lines elsewhere (CI logs stay readable)."""

from __future__ import annotations

import sys
import time
from typing import TextIO


class Progress:
    """Counts finished units of a long run and shows rate, elapsed time and the last item."""

    def __init__(self, label: str, total: int, stream: TextIO | None = None,
                 quiet: bool = False) -> None:
        self.label = label
        self.total = total
        self.done = 0
        self.stream = stream or sys.stderr
        self.quiet = quiet
        self.live = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.started = time.perf_counter()

    def advance(self, note: str) -> None:
        """One more unit is finished; ``note`` says which and how it ended."""
        self.done += 1
        if self.quiet:
            return
        elapsed = time.perf_counter() - self.started
        rate = self.done / elapsed if elapsed > 0 else 0.0
        line = (f"[{self.label}] {self.done}/{self.total} {elapsed:5.1f}s "
                f"{rate:4.1f}/s  {note}")
        if self.live:
            self.stream.write("\r\x1b[2K" + line[:160])
            if self.done == self.total:
                self.stream.write("\n")
        else:
            self.stream.write(line + "\n")
        self.stream.flush()
