"""Verdict merging, exit codes, mutant statuses and JSON round trips of the result types."""

from __future__ import annotations

import pytest

from harness.model import (
    Counts,
    ExitCode,
    Finding,
    MutantStatus,
    Verdict,
    exit_code,
    merge_verdicts,
    mutant_status,
)

H, V, N, E = Verdict.HELD, Verdict.VIOLATED, Verdict.NOT_APPLICABLE, Verdict.ERROR


def finding(verdict: Verdict, **kw) -> Finding:
    base = dict(invariant_id="ARIB-X-001", invariant="i", fault="f", target="t",
                sdk_version="0", python_version="3", verdict=verdict, trials=1,
                violating_trials=int(verdict is V), counts=Counts(), seeds=(1,),
                duration_s=0.1)
    base.update(kw)
    return Finding(**base)


@pytest.mark.parametrize("verdicts, merged", [
    ([H, H], H), ([H, V], V), ([V, E], E), ([N, N], N), ([N, H], H), ([], N), ([E, N], E),
])
def test_merge_verdicts(verdicts, merged):
    assert merge_verdicts(verdicts) is merged


@pytest.mark.parametrize("verdicts, code", [
    ([H, H], ExitCode.OK),
    ([H, N], ExitCode.OK),
    ([H, V], ExitCode.VIOLATED),
    ([V, N], ExitCode.VIOLATED),
    ([V, E], ExitCode.ERROR_OR_NOTHING),
    ([H, E], ExitCode.ERROR_OR_NOTHING),
    ([N, N], ExitCode.ERROR_OR_NOTHING),  # only abstentions: nothing was measured
    ([], ExitCode.ERROR_OR_NOTHING),  # no findings: nothing was measured
])
def test_exit_code(verdicts, code):
    assert exit_code([finding(v) for v in verdicts]) is code
    assert int(code) in (0, 1, 4)


@pytest.mark.parametrize("runs, expected, status", [
    ([V, V, V], V, MutantStatus.KILLED),
    ([H, H, H], V, MutantStatus.SURVIVED),
    ([V, H, V], V, MutantStatus.FLAKY),
    ([E, E, E], V, MutantStatus.ERROR),
    ([N, N, N], N, MutantStatus.KILLED),
    ([H, H, H], N, MutantStatus.SURVIVED),
    ([E, E, E], E, MutantStatus.KILLED),
    ([], V, MutantStatus.ERROR),
])
def test_mutant_status(runs, expected, status):
    assert mutant_status(runs, expected) is status


def test_timeouts_give_timeout_status():
    assert mutant_status([E, E], V, timeouts=2) is MutantStatus.TIMEOUT


def test_counts_add_and_total():
    total = Counts(1, 2, 3, 4) + Counts(1, 0, 0, 1)
    assert total == Counts(2, 2, 3, 5)
    assert total.total == 12


def test_finding_round_trip():
    f = finding(V, counts=Counts(lost=3), samples=("x",), modes={"lossy": 1}, replay="cmd",
                ops=("a", "b"))
    assert Finding.from_json(f.to_json()) == f
    assert f.to_json()["verdict"] == "violated"
