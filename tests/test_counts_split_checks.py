"""The openai-agents checks count a call that had to succeed and raised as ``raised`` and a
wrong answer as ``wrong_result`` (issue 38 point 5), with each trial's total unchanged."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import anyio
import pytest

from arib.checks.openai_agents._calls import ProblemLog, Stop
from arib.checks.openai_agents._problems import Problems
from arib.checks.openai_agents.drain_001 import Call, judge_drain
from arib.checks.openai_agents.dur_001 import _judge
from arib.ground.model import Counts

CHECKS = Path(__file__).parents[1] / "checks"
COUNTERS = {"Counts", "tally", "Problems"}


class _Ctx:
    index, seed, ops = 0, 1, ["op"]


def test_no_check_passes_the_unsplit_errors_counter() -> None:
    """Every check says what it counts: no ``Counts``, ``tally`` or ``Problems`` call passes
    ``errors=`` (read as wrong_result, whatever it counted)."""
    unsplit = []
    for path in sorted(CHECKS.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Call) and any(k.arg == "errors" for k in node.keywords):
                name = getattr(node.func, "id", getattr(node.func, "attr", ""))
                if name in COUNTERS:
                    unsplit.append(f"{path.relative_to(CHECKS)}:{node.lineno}")
    assert unsplit == []


def test_problems_count_raised_and_wrong_results_apart() -> None:
    found = Problems(wrong_result=1, raised=2)
    found.add("read_raised", "get_items() raised RuntimeError('x')")
    trial = found.trial(_Ctx(), "held")  # type: ignore[arg-type]
    assert trial.violated and trial.mode == "read_raised"
    assert trial.counts == Counts(wrong_result=1, raised=2)


def test_a_problem_log_counts_a_plain_call_that_raised_as_raised() -> None:
    log = ProblemLog()

    async def failing() -> Any:
        raise RuntimeError("store gone")

    async def scenario() -> None:
        with pytest.raises(Stop):
            await log.must("add_items", failing)

    anyio.run(scenario)
    log.add("not_released", "the store file is still open")
    trial = log.judged(_Ctx(), "released")  # type: ignore[arg-type]
    assert trial.counts == Counts(wrong_result=1, raised=1) and trial.mode == "call_failed"


def _call(name: str, invoked: int, ended: int, error: BaseException | None = None) -> Call:
    return Call(name, "add", [{"role": "user", "content": name}], invoked, ended, None, error)


def test_drain_counts_an_in_flight_call_that_raised_as_raised() -> None:
    marker = {"role": "user", "content": "marker"}
    failed = _call("add #0", 0, 6, ConnectionError("pulled"))
    verdict = judge_drain([], [failed], 5, 8, marker, [marker])
    assert verdict is not None and verdict[0] == "not_drained"
    assert verdict[2] == Counts(raised=1)
    accepted = _call("late add", 9, 10)
    verdict = judge_drain([], [accepted], 5, 8, marker, [accepted.batch[0], marker])
    assert verdict is not None and verdict[0] == "accepted_after_close"
    assert verdict[2] == Counts(wrong_result=1)


def test_dur_counts_a_writer_exception_as_raised_and_a_silent_writer_as_wrong() -> None:
    plan = [[{"role": "user", "content": f"{b}"}] for b in range(3)]
    problems = ["append 1 raised OperationalError", "the writer stopped acknowledging"]
    trial = _judge(_Ctx(), plan, [0], 1, plan[0], problems, raised=1)  # type: ignore[arg-type]
    assert trial.violated and trial.mode == "writer_error"
    assert trial.counts == Counts(wrong_result=1, raised=1)
