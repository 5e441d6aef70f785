"""Verdict merging, exit codes, mutant statuses and JSON round trips of the result types."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from arib.ground import model
from arib.ground.model import (
    CleanBase,
    Counts,
    ExitCode,
    Finding,
    MutantStatus,
    Verdict,
    exit_code,
    merge_verdicts,
    mutant_status,
    verdict_exit_code,
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
    # The bench and the parity gate map a merged verdict to the same exit code.
    assert verdict_exit_code(merge_verdicts(verdicts)) is code


@pytest.mark.parametrize("verdict, code", [
    (H, ExitCode.OK), (V, ExitCode.VIOLATED), (E, ExitCode.ERROR_OR_NOTHING),
    (N, ExitCode.ERROR_OR_NOTHING),
])
def test_verdict_exit_code(verdict, code):
    assert verdict_exit_code(verdict) is code


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


@pytest.mark.parametrize("runs, timeouts, hang_kills, status", [
    ([E, E, E], 3, False, MutantStatus.TIMEOUT),  # a hang is its own status
    ([E, E, E], 3, True, MutantStatus.KILLED),  # unless "does not hang" is the invariant
    ([V, E, V], 1, True, MutantStatus.KILLED),
    ([V, E, V], 1, False, MutantStatus.FLAKY),  # a kill that did not repeat
    ([H, E, H], 1, False, MutantStatus.TIMEOUT),  # a hang seen, nothing killed
    ([H, E, H], 1, True, MutantStatus.FLAKY),
    ([E, E, E], 0, True, MutantStatus.ERROR),  # errors are never timeouts or kills
])
def test_a_timeout_is_a_kill_only_for_a_hang_invariant(runs, timeouts, hang_kills, status):
    assert mutant_status(runs, V, timeouts, hang_kills=hang_kills) is status


def test_a_claim_mutant_expecting_an_error_is_not_killed_by_a_timeout():
    assert mutant_status([E, E], E, timeouts=2) is MutantStatus.TIMEOUT
    assert mutant_status([E, E], E, timeouts=1) is MutantStatus.FLAKY


def test_clean_base_is_judgeable_only_when_every_rerun_held():
    held = CleanBase("ARIB-X-001", "sqlite-file", (H, H, H), 0.5)
    assert held.judgeable and not held.abstains
    flaky = CleanBase("ARIB-X-001", "sqlite-file", (H, V, H), 0.5, "1/10 trials violated")
    assert not flaky.judgeable
    assert flaky.describe() == ("clean 'sqlite-file' gave held, violated, held "
                                "(1/10 trials violated)")
    assert flaky.to_json()["judgeable"] is False
    abstains = CleanBase("ARIB-X-001", "sqlite-file", (N, N, N), 0.1)
    assert abstains.abstains and not abstains.judgeable
    assert not CleanBase("ARIB-X-001", "sqlite-file", (), 0.0).judgeable


def test_a_clean_base_gives_its_reason_only_when_it_is_not_judgeable():
    assert CleanBase("C", "lane", (H, H), 0.1).describe() == "clean 'lane' gave held, held"
    assert CleanBase("C", "lane", (H, E), 0.1).describe() == "clean 'lane' gave held, error"
    assert CleanBase("C", "lane", (H, E), 0.1, "boom").describe() == (
        "clean 'lane' gave held, error (boom)")


def test_clean_base_json_names_every_field():
    base = CleanBase("ARIB-X-001", "sqlite-file", (H, V), 0.123456, "lost 2")
    assert base.to_json() == {"check_id": "ARIB-X-001", "lane": "sqlite-file",
                              "verdicts": ["held", "violated"], "judgeable": False,
                              "duration_s": 0.1235, "reason": "lost 2"}


def test_a_clean_base_not_run_because_its_mutants_are_cached_is_judgeable_and_says_so():
    base = CleanBase("ARIB-X-001", "sqlite-file", (), 0.0, cached=True)
    assert base.judgeable and not base.abstains
    assert base.describe() == ("clean 'sqlite-file' not run: every paired mutant's result "
                               "is cached")
    assert base.to_json()["cached"] is True and base.to_json()["verdicts"] == []


def test_every_status_is_documented():
    source = Path(model.__file__).read_text()
    block = source[source.index("class MutantStatus"):source.index("class ExitCode")]
    for status in MutantStatus:
        before = block[:block.index(f"    {status.name} = ")].rstrip().splitlines()[-1]
        assert before.strip().startswith("#"), f"{status.name} has no comment"


def test_counts_add_and_total():
    total = Counts(1, 2, 3, 4) + Counts(1, 0, 0, 1)
    assert total == Counts(2, 2, 3, 5)
    assert total.total == 12


def test_finding_round_trip():
    f = finding(V, counts=Counts(lost=3), samples=("x",), modes={"lossy": 1}, replay="cmd",
                ops=("a", "b"))
    assert Finding.from_json(f.to_json()) == f
    assert f.to_json()["verdict"] == "violated"


def test_a_reused_clean_base_says_so_and_round_trips_through_json():
    base = CleanBase("ARIB-X-001", "sqlite-file", (H, H, H), 0.123456, reused=True)
    assert base.judgeable and base.reused and not base.cached
    assert base.describe() == ("clean 'sqlite-file' gave held, held, held (an earlier run's, "
                               "reused: its inputs are unchanged)")
    assert base.to_json() == {"check_id": "ARIB-X-001", "lane": "sqlite-file",
                              "verdicts": ["held", "held", "held"], "judgeable": True,
                              "duration_s": 0.1235, "reason": None, "reused": True}
    assert CleanBase.from_json(base.to_json()) == dataclasses.replace(base, duration_s=0.1235)
    flaky = CleanBase("ARIB-X-001", "lane", (H, V), 2.0, "lost 2")
    assert CleanBase.from_json(flaky.to_json()) == flaky
    assert "reused" not in flaky.to_json()
    cached = CleanBase("ARIB-X-001", "lane", (), 0.0, cached=True)
    assert CleanBase.from_json(cached.to_json()) == cached


def test_a_timeout_is_an_outcome_of_the_run_written_and_read_back():
    timed = finding(E, trials=0, violating_trials=0, reason="trial 0 exceeded", timed_out=True)
    assert timed.to_json()["timed_out"] is True and timed.to_json()["modes"] == {}
    assert Finding.from_json(timed.to_json()) == timed
    assert finding(H).to_json()["timed_out"] is False


@pytest.mark.parametrize("written, timed_out, modes", [
    # before the field existed: an error finding with the old mark is read as timed out,
    # and the mark leaves its modes
    ({"verdict": "error", "modes": {"timeout": 1}}, True, {}),
    ({"verdict": "error", "modes": {}}, False, {}),  # another error: a crash, a bad claim
    ({"verdict": "error"}, False, {}),
    # a trial's mode of that name on a judged finding is a mode, never a timeout
    ({"verdict": "violated", "modes": {"timeout": 1}}, False, {"timeout": 1}),
    # with the field, the field alone decides
    ({"verdict": "error", "modes": {"timeout": 1}, "timed_out": False}, False, {"timeout": 1}),
    ({"verdict": "error", "modes": {}, "timed_out": True}, True, {}),
])
def test_a_finding_written_before_timed_out_existed_reads_as_it_meant(written, timed_out, modes):
    document = {**finding(E, trials=0, violating_trials=0, reason="r").to_json(), **written}
    if "timed_out" not in written:
        del document["timed_out"]
    if "modes" not in written:
        del document["modes"]
    if written["verdict"] == "violated":
        document |= {"violating_trials": 1, "replay": "cmd"}
    assert model.recorded_timeout(document) is timed_out
    back = Finding.from_json(document)
    assert back.timed_out is timed_out and dict(back.modes) == modes


def test_a_loop_is_parsed_by_one_rule_for_every_command(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    from arib.ground.errors import UsageError
    from arib.ground.model import Loop

    assert Loop.parse("asyncio") is Loop.ASYNCIO
    with pytest.raises(UsageError, match="unknown event loop 'trio': use one of asyncio, uvloop"):
        Loop.parse("trio")
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "uvloop" else real(name, *a))
    with pytest.raises(UsageError, match="'uvloop' asked for but uvloop is not installed"):
        Loop.parse("uvloop")
