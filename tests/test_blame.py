"""arib.blame: a backend's exception inside a check is evidence, for every check.

Every check of the family, by name, runs on the reference lane whose reads, writes, pops and
clears start raising ValueError after a few calls: the finding is a verdict (violated, or an
abstention), never ``error``. Exceptions of the harness's own making stay errors.
"""

from __future__ import annotations

import functools
import json
from typing import Any

import pytest

from arib.blame import MODE, backend_raised
from arib.checks.registry import get_check, load_checks
from arib.execute import RunOptions, run_check
from arib.ground.child import run_one
from arib.ground.model import Finding, Verdict
from arib.targets.openai_agents.reference import REFERENCE, ReferenceSession

FAILURE = "the backend failed to decode a row"
METHODS = ("get_items", "add_items", "pop_item", "clear_session")


def _failing_after(calls: int) -> None:
    """From the ``calls``-th call on, every read, write, pop and clear of the reference
    raises ValueError (patched in the forked child only)."""
    count = [0]

    def wrap(original: Any) -> Any:
        @functools.wraps(original)
        async def method(self: Any, *args: Any, **kwargs: Any) -> Any:
            count[0] += 1
            if count[0] > calls:
                raise ValueError(FAILURE)
            return await original(self, *args, **kwargs)
        return method

    for name in METHODS:
        setattr(ReferenceSession, name, wrap(getattr(ReferenceSession, name)))


def _judge(check_id: str, calls: int) -> Finding:
    _failing_after(calls)
    check = get_check(check_id)
    return run_check(check, REFERENCE, RunOptions(params=check.resolve_params({"trials": 1})))


@pytest.mark.slow
@pytest.mark.parametrize("check_id", sorted(c.id for c in load_checks()))
def test_every_check_judges_a_backend_exception_as_evidence(check_id: str) -> None:
    for calls in (1, 4):
        outcome = run_one(functools.partial(_judge, check_id, calls), 120)
        finding = outcome.value
        assert finding is not None, outcome.detail
        assert finding.verdict is not Verdict.ERROR, (calls, finding.reason, finding.traceback)
        if finding.verdict is Verdict.VIOLATED:
            assert finding.samples, finding


def _raise_from_backend() -> None:
    def backend_call() -> None:  # a frame of code that is not the harness's: the backend's
        raise ValueError(FAILURE)

    _in_harness(backend_call)


def _in_harness(call: Any) -> None:
    exec(compile("call()", "/x/harness/fake_check.py", "exec"), {"call": call})


def _caught(fn: Any) -> BaseException:
    try:
        fn()
    except Exception as exc:  # noqa: BLE001 - the exception under judgement
        return exc
    raise AssertionError("did not raise")


def _harness_runs(source: str, **names: Any) -> BaseException:
    """The exception of ``source`` run as the harness's code (a file under its folder)."""
    return _caught(lambda: exec(compile(source, "/x/harness/fake_check.py", "exec"), names))


def test_an_exception_the_harness_raises_itself_is_not_the_backends(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("arib.blame.HARNESS", ("/x/harness/",))
    where = backend_raised(_caught(_raise_from_backend))
    assert where is not None and where.startswith("test_blame.py:") and MODE == "backend_raised"
    assert backend_raised(_harness_runs("raise KeyError('x')")) is None
    # json, a library the harness called itself: its own failure
    assert backend_raised(_harness_runs("json.loads('{')", json=json)) is None


def test_a_call_the_backend_refused_as_made_is_the_harness_misuse(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("arib.blame.HARNESS", ("/x/harness/",))

    def backend(limit: int) -> None:
        del limit

    assert backend_raised(_harness_runs("backend(1, 2)", backend=backend)) is None
    def backend_fails(limit: int) -> None:
        raise TypeError(f"'{type(limit).__name__}' object is not subscriptable")

    # the callee failed on the argument it was given (refused as made): the harness's call
    assert backend_raised(_harness_runs("backend_fails(None)", backend_fails=backend_fails)) \
        is None


def test_a_task_group_of_backend_exceptions_is_the_backends(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("arib.blame.HARNESS", ("/x/harness/",))
    import sys

    if sys.version_info >= (3, 11):
        group = ExceptionGroup  # noqa: F821 - a builtin from 3.11 on
    else:  # anyio's backport on 3.10
        from exceptiongroup import ExceptionGroup as group
    backend = _caught(_raise_from_backend)
    own = _harness_runs("raise KeyError('x')")
    assert backend_raised(group("tasks", [backend])) is not None
    assert backend_raised(group("tasks", [backend, own])) is None
