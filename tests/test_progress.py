"""harness/progress.py: a live line on a terminal, a summary every few seconds elsewhere."""

from __future__ import annotations

import io

from arib.progress import Progress


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_off_a_terminal_a_summary_at_most_every_ten_seconds_and_a_final_one() -> None:
    clock, out = Clock(), io.StringIO()
    progress = Progress("survey", 100, stream=out, clock=clock)
    for i in range(100):
        clock.now = i * 0.25  # 100 units in 25 s
        progress.advance(f"lane m{i} x ARIB-CONC-001: {'violated' if i % 4 else 'held'}")
    lines = out.getvalue().splitlines()
    assert len(lines) == 3  # at 10 s, at 20 s, and the final line
    assert lines[0].startswith("[survey] 41/100  10.0s") and "left" in lines[0]
    assert "last: lane m40 x ARIB-CONC-001: held" in lines[0]
    assert lines[-1].startswith("[survey] 100/100") and lines[-1].endswith(
        "finished: 25 held, 75 violated")


def test_a_total_that_shrinks_ends_with_finish_once() -> None:
    out = io.StringIO()
    progress = Progress("mutants", 10, stream=out, clock=Clock())
    progress.advance("a: killed")
    progress.total -= 5  # pairs skipped after a kill
    progress.finish()
    progress.finish()
    assert out.getvalue().splitlines() == ["[mutants] 1/5   0.0s  0.0/s  finished: 1 killed"]


def test_on_a_terminal_one_live_line_is_redrawn() -> None:
    out = Terminal()
    progress = Progress("bench", 3, stream=out, clock=Clock())
    for note in ("a: held", "b: held", "c: violated"):
        progress.advance(note)
    text = out.getvalue()
    assert text.count("\r\x1b[2K") == 3 and text.count("\n") == 1 and text.endswith("\n")
    assert "c: violated" in text


def test_quiet_prints_nothing() -> None:
    out = io.StringIO()
    progress = Progress("x", 2, stream=out, quiet=True)
    progress.advance("a: held")
    progress.advance("b: held")
    assert out.getvalue() == "" and progress.done == 2
