"""arib.ground.schedule.record: the text form round-trips, and what does not parse is
refused with one line naming it."""

from __future__ import annotations

import pytest

from arib.ground.schedule.record import Decision, Schedule, ScheduleError, parse_argument


def test_text_round_trips_with_runs_groups_marks_and_big_actors() -> None:
    decisions = (Decision((0,)), Decision((1,)), Decision((1,)), Decision((1,)),
                 Decision((2,), False), Decision((0, 1), False), Decision((70,)),
                 Decision((70,)))
    schedule = Schedule("pct", 0x5F3A, {"d": 2, "k": 40}, decisions)
    text = schedule.text()
    assert text == "pct.d2.k40.s5f3a:01(3)2~[01]~{70}(2)"
    parsed = Schedule.parse(text)
    assert (parsed.strategy, parsed.seed, dict(parsed.params), parsed.decisions) == (
        "pct", 0x5F3A, {"d": 2, "k": 40}, decisions)
    assert (parsed.controlled, parsed.uncontrolled) == (6, 2)


def test_an_empty_schedule_and_its_share() -> None:
    empty = Schedule.parse("random.s0:")
    assert empty.decisions == () and empty.share == 1.0


def test_json_form_carries_the_text_and_counts() -> None:
    schedule = Schedule("random", 7, {}, (Decision((0,)), Decision((1,), False)), ("a", "b"))
    data = schedule.to_json()
    assert data["text"] == "random.s7:01~" and data["controlled"] == 1
    assert data["uncontrolled"] == 1 and data["actors"] == ["a", "b"]
    assert Schedule.from_json(data) == schedule


@pytest.mark.parametrize(("text", "names"), [
    ("random", "no ':'"),
    ("Random.s1:0", "strategy 'Random'"),
    ("pct.dx.s1:0", "head parameter 'dx'"),
    ("pct.d2:0", "no seed"),
    ("random.s1:0?", "'?' is not an actor"),
    ("random.s1:0(1)", "count of at least 2"),
    ("random.s1:[0]", "fewer than two"),
    ("random.s1:[01", "not closed"),
    ("random.s1:{x}", "'{' must hold"),
])
def test_what_does_not_parse_is_refused_in_one_line_naming_it(text: str, names: str) -> None:
    with pytest.raises(ScheduleError) as caught:
        Schedule.parse(text)
    message = str(caught.value)
    assert names in message and repr(text)[:20] in message and "\n" not in message
    assert caught.value.exit_code == 2


def test_an_argument_is_the_text_or_a_file(tmp_path: object) -> None:
    from pathlib import Path

    path = Path(str(tmp_path)) / "s.txt"
    path.write_text("random.s1:01\n")
    assert parse_argument(f"@{path}").decisions == (Decision((0,)), Decision((1,)))
    with pytest.raises(ScheduleError, match="cannot read"):
        parse_argument(f"@{path}.missing")
