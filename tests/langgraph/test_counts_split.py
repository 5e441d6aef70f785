"""The LangGraph checks count a call that had to succeed and raised as ``raised`` and any other
violation (a hang, a crash, a half-done or lost operation) as ``wrong_result`` (issue 38 point
5); each trial's total is what it was."""

from __future__ import annotations

from arib.checks.langgraph._cancelled import HELD, SETUP_FAILED, Words, point_counts
from arib.checks.langgraph._writers import Outcome, RaisedText, problem_counts, record
from arib.ground.model import Counts

WORDS = Words(poisoned="poisoned_saver", read="list", partial="half there", undone="absent",
              next_op="next op")


def test_a_writer_op_that_raised_is_raised_and_a_crash_is_a_wrong_result() -> None:
    outcome = Outcome()
    record(outcome, {"error": 3, "what": "OperationalError('locked')"}, "writer-0")
    record(outcome, {"crash": "SIGSEGV"}, "writer-1")
    assert isinstance(outcome.problems[0], RaisedText)
    assert "raised OperationalError" in outcome.problems[0]
    assert not isinstance(outcome.problems[1], RaisedText)
    problems = [*outcome.problems, "writer-2 stopped after 4 acks"]
    assert problem_counts(problems) == Counts(wrong_result=2, raised=1)
    assert problem_counts([]) == Counts()


def test_cancellation_points_split_by_whether_a_call_raised() -> None:
    modes = [HELD[0], SETUP_FAILED, WORDS.poisoned, "hung_after_cancel", "partial",
             "divergent_view", "absent_then_lost"]
    counts = point_counts(modes, WORDS)
    assert counts == Counts(wrong_result=4, raised=2)
    assert counts.total == sum(mode not in HELD for mode in modes)  # one per violated point
