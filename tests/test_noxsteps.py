"""`nox -s bench`'s steps: a step that refused (exit 2) or was stopped by a signal stops the
session; nothing after it runs, so no other version's results are touched."""

from __future__ import annotations

import subprocess
import sys

import pytest

from arib.dev.noxsteps import (
    Outcome,
    Step,
    exit_meaning,
    partial_note,
    partial_selection,
    run_steps,
)


def plan(sdk: str) -> list[Step]:
    return [Step("bench", ("bench", sdk)), Step("parity gate", ("parity", sdk))]


def runner(codes: dict[tuple[str, ...], int]):
    ran: list[tuple[str, ...]] = []

    def run(step: Step) -> int:
        ran.append(step.command)
        return codes.get(step.command, 0)

    return ran, run


def test_a_mislabelled_environment_refused_by_the_bench_runs_nothing_after_it():
    # The bench of 0.24.0 refuses its environment (exit 2): its parity update, which would
    # write the results of the version really installed there, never runs, nor 0.19.2's steps.
    ran, run = runner({("bench", "0.24.0"): 2})
    outcome = run_steps(["0.24.0", "0.19.2"], plan, run)
    assert ran == [("bench", "0.24.0")]
    assert outcome.failed == ()
    assert outcome.refusal is not None
    assert outcome.refusal.startswith("the bench of openai-agents 0.24.0 exited 2 (a usage error")
    assert "the versions 0.19.2 and the cross-version report were not run" in outcome.refusal


def test_measured_outcomes_go_on_and_are_reported_at_the_end():
    ran, run = runner({("bench", "0.19.2"): 1, ("parity", "0.19.2"): 4,
                       ("bench", "0.24.0"): 3})
    outcome = run_steps(["0.19.2", "0.24.0"], plan, run)
    assert ran == [("bench", "0.19.2"), ("parity", "0.19.2"), ("bench", "0.24.0"),
                   ("parity", "0.24.0")]
    assert outcome == Outcome(("0.19.2 parity gate (exit 4)", "0.24.0 (exit 3)"), None)


@pytest.mark.parametrize(("code", "meaning"), [(130, "stopped by SIGINT"),
                                                (-9, "stopped by SIGKILL"),
                                                (5, "not an exit code of the harness")])
def test_a_step_stopped_by_a_signal_or_an_unknown_code_stops_the_session(code, meaning):
    ran, run = runner({("parity", "0.19.2"): code})
    outcome = run_steps(["0.19.2", "0.24.0"], plan, run, family="langgraph")
    assert ran == [("bench", "0.19.2"), ("parity", "0.19.2")]
    assert outcome.refusal is not None and meaning in outcome.refusal
    assert outcome.refusal.startswith(f"the parity gate of langgraph 0.19.2 exited {code}")
    assert exit_meaning(code).startswith(meaning)


def test_the_steps_of_a_version_are_made_only_when_it_is_reached():
    # Its environment is built then (sdk_env in the noxfile): a refused version before it
    # builds nothing more.
    asked: list[str] = []

    def steps(sdk: str) -> list[Step]:
        asked.append(sdk)
        return plan(sdk)

    run_steps(["a", "b"], steps, lambda step: 2)
    assert asked == ["a"]


def test_real_processes_exit_codes_are_read_as_they_are(tmp_path):
    def run(step: Step) -> int:
        return subprocess.run(step.command, check=False).returncode

    def steps(sdk: str) -> list[Step]:
        marker = tmp_path / f"parity-{sdk}"
        return [Step("bench", (sys.executable, "-c", f"raise SystemExit({sdk})")),
                Step("parity gate", (sys.executable, "-c", f"open({str(marker)!r}, 'w')"))]

    outcome = run_steps(["1", "2", "4"], steps, run)
    assert [p.name for p in sorted(tmp_path.iterdir())] == ["parity-1"]
    assert outcome.refusal is not None and "exited 2" in outcome.refusal
    assert outcome.to_json() == {"failed": [], "refusal": outcome.refusal}


@pytest.mark.parametrize(("args", "selection"), [
    (["--checks", "ARIB-CONC-001"], "--checks ARIB-CONC-001"),
    (["--lanes=sqlite-file", "--workers", "1", "--checks", "A,B"],
     "--lanes sqlite-file, --checks A,B"),
    (["--shard", "1/2"], "--shard 1/2"),
    (["--workers", "1", "--out", "r"], None),
    ([], None),
])
def test_a_bench_with_a_selection_is_partial(args, selection):
    assert partial_selection(args) == selection


def test_a_partial_run_says_partial_and_why_it_is_not_compared():
    note = partial_note("--checks ARIB-CONC-001", "openai-agents")
    assert note.startswith("partial run (--checks ARIB-CONC-001): only those cells of "
                           "openai-agents were measured")
    assert "compares whole runs only, so it was not made" in note
