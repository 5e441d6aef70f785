"""Judging mutants: the pipeline admission and the survey share (harness/judging.py)."""

from __future__ import annotations

import dataclasses
import importlib
from typing import Any

import pytest

from arib.caches.verdicts import AdmissionCache
from arib.checks.registry import get_check, validate_module
from arib.execute import derive_seed
from arib.ground.child import ChildOutcome, ChildStatus
from arib.ground.keys import MutantKey, Pair
from arib.ground.model import CleanBase, MutantStatus, Verdict
from arib.judging import (
    Judged,
    Judging,
    PairJob,
    _finding,
    _result,
    clean_base,
    clean_reruns,
    judge_mutants,
    mutant_timeout,
)
from arib.mutants.registry import get_mutant
from arib.targets.openai_agents.reference import REFERENCE
from tests.test_model_mutations import full_finding

S, V = MutantStatus, Verdict.VIOLATED


@pytest.fixture()
def conc():
    return validate_module(importlib.import_module("arib.checks.openai_agents.conc_001"))


def how(cache: AdmissionCache | None = None, **kw: Any) -> Judging:
    return Judging(**{"kind": "admission", "reruns": 2, "workers": 2,
                      "cache": cache or AdmissionCache(None),
                      "cache_statuses": frozenset({S.KILLED, S.SURVIVED}), "quiet": True,
                      **kw})


def pair(check: Any, name: str, **kw: Any) -> PairJob:
    return PairJob(**{"check": check, "lane": REFERENCE, "mutant": get_mutant(name),
                   "expected": V, "clean_s": 0.4, "key": f"key-{name}", **kw})


def test_a_pair_is_found_by_check_and_its_mutant_on_its_lane(conc):
    p = pair(conc, "reference_lost_update")
    assert p.pair == Pair(conc.id, MutantKey(REFERENCE.name, p.mutant.id))
    assert str(p.pair) == f"{conc.id} on {REFERENCE.name}:{p.mutant.id}"
    other = dataclasses.replace(p, lane=dataclasses.replace(REFERENCE, name="twin"))
    assert other.pair == Pair(conc.id, MutantKey("twin", p.mutant.id)) != p.pair


def test_a_pairs_limit_scales_from_its_clean_run_and_its_lanes_waits(conc):
    assert REFERENCE.waits_s > 0
    p = pair(conc, "reference_lost_update", clean_s=0.4)
    assert p.limit_s == mutant_timeout(conc, 0.4, REFERENCE.waits_s) > mutant_timeout(conc, 0.4)
    still = dataclasses.replace(p, lane=dataclasses.replace(REFERENCE, waits_s=0.0))
    assert still.limit_s == mutant_timeout(conc, 0.4) == 4.0
    # Room for two of the lane's waits plus the clean run plus the margin, from any wait up.
    assert mutant_timeout(conc, 0.5, 3.0) == 2 * 3.0 + 0.5 + 2.0
    assert mutant_timeout(conc, 0.1, 1.0) == pytest.approx(2 * 1.0 + 0.1 + 2.0)


def test_a_mutant_run_stops_early_and_trusts_the_clean_runs_claims(conc):
    opts = how(run_seed=5, kind="survey", params={conc.id: {"trials": 1}}, tmpdir="/fast",
               services={"redis": "redis://x"}).options(conc, 1)
    assert opts.stop_on_violation is True and opts.verify_claims is False
    assert opts.run_seed == derive_seed(5, "survey", 1) != derive_seed(5, "admission", 1)
    assert opts.params == {"writers": 8, "appends": 25, "trials": 1}
    assert opts.tmpdir == "/fast" and opts.services == {"redis": "redis://x"}


def test_a_failed_child_is_an_error_finding_under_the_pairs_limit(conc):
    p = pair(conc, "reference_lost_update", lane=dataclasses.replace(REFERENCE, waits_s=0.0))
    finding = _finding(p, 1, ChildOutcome(ChildStatus.TIMEOUT, detail="x"), how(run_seed=3))
    assert finding.verdict is Verdict.ERROR
    assert "(4.0s + grace)" in (finding.reason or "")
    assert finding.timed_out and finding.modes == {}
    assert finding.params["run_seed"] == derive_seed(3, "admission", 1)


def test_a_clean_base_runs_as_often_as_the_mutants_and_at_least_three_times():
    assert [clean_reruns(n) for n in (1, 2, 3, 4, 7)] == [3, 3, 3, 4, 7]


def held(duration_s: float) -> Any:
    return full_finding(verdict=Verdict.HELD, violating_trials=0, samples=(), reason=None,
                        duration_s=duration_s)


def test_a_clean_base_that_held_keeps_every_verdict_and_its_longest_run():
    base = clean_base("ARIB-X-001", "lane", [held(0.2), held(0.7), held(0.5)])
    assert base == CleanBase("ARIB-X-001", "lane", (Verdict.HELD,) * 3, 0.7, None)
    assert base.judgeable
    assert clean_base("ARIB-X-001", "lane", []) == CleanBase("ARIB-X-001", "lane", (), 0.0)


@pytest.mark.parametrize("bad, reason", [
    # A violated rerun says how many trials violated, then its reason or its first sample.
    (dict(verdict=V, trials=10, violating_trials=2, reason="lost 2"),
     "2/10 trials violated: lost 2"),
    (dict(verdict=V, trials=10, violating_trials=2, reason=None), "2/10 trials violated: s1"),
    (dict(verdict=V, trials=10, violating_trials=2, reason=None, samples=()),
     "2/10 trials violated"),
    # Any other verdict gives its reason, else its first sample, else nothing.
    (dict(verdict=Verdict.ERROR, violating_trials=0, reason="boom"), "boom"),
    (dict(verdict=Verdict.ERROR, violating_trials=0, reason=None), "s1"),
    (dict(verdict=Verdict.ERROR, violating_trials=0, reason=None, samples=()), None),
    (dict(verdict=Verdict.NOT_APPLICABLE, violating_trials=1, reason="no ttl"), "no ttl"),
    # Trials are counted only for a violated rerun that names violating trials.
    (dict(verdict=V, violating_trials=0, reason="claimed"), "claimed"),
])
def test_a_clean_base_that_did_not_hold_says_why(bad: dict[str, Any], reason: str | None):
    base = clean_base("ARIB-X-001", "lane", [held(0.1), full_finding(**bad), held(0.1)])
    assert base.verdicts == (Verdict.HELD, bad["verdict"], Verdict.HELD)
    assert base.reason == reason and not base.judgeable


def test_a_clean_base_reason_is_the_first_bad_reruns_and_at_most_300_characters():
    first = full_finding(verdict=Verdict.ERROR, reason="x" * 299 + "yz")
    later = full_finding(verdict=Verdict.ERROR, reason="later")
    assert clean_base("C", "lane", [held(0.1), first, later]).reason == "x" * 299 + "y"
    assert clean_base("C", "lane", [later, first]).reason == "later"


def test_a_result_is_cached_only_when_settled_and_allowed(conc, tmp_path):
    cache = AdmissionCache(tmp_path)
    killed = [full_finding(duration_s=1.0), full_finding(duration_s=2.0)]
    flaky = [full_finding(), full_finding(verdict=Verdict.HELD, violating_trials=0)]
    kept = pair(conc, "reference_lost_update")
    result = _result(kept, killed, how(cache), share=10.0)
    assert (result.status, result.runs, result.diff) == (S.KILLED, (V, V), None)
    assert (result.check_id, result.mutant_id, result.kind, result.target, result.description) == (
        conc.id, kept.mutant.id, kept.mutant.kind, REFERENCE.name, kept.mutant.description)
    assert result.duration_s == 3.0 and result.evidence and result.evidence.startswith(
        "verdict violated")
    assert cache.get(kept.key) == result
    assert _result(kept, killed, how(cache, wall_share=True), share=10.0).duration_s == 20.0
    shown = pair(conc, "reference_corrupts_content", store=False)
    assert _result(shown, killed, how(cache), share=0.0).status is S.KILLED
    unsettled = pair(conc, "reference_without_close")
    bad = _result(unsettled, flaky, how(cache), share=0.0)
    assert bad.status is S.FLAKY and bad.diff
    assert cache.get(shown.key) is None and cache.get(unsettled.key) is None


def test_pairs_run_in_children_then_come_from_the_cache(tmp_path):
    # A write after close dropped silently is seen; a read crash past 50 items is not.
    check = get_check("ARIB-CONC-003")
    seen = pair(check, "reference_silent_drop_after_close", key="seen")
    unseen = pair(check, "reference_read_crashes", key="unseen", store=False)
    cache = AdmissionCache(tmp_path)
    first = judge_mutants([seen, unseen], how(cache))
    assert first.results[seen.pair].status is S.KILLED
    assert first.results[unseen.pair].status is S.SURVIVED
    assert first.results[unseen.pair].runs == (Verdict.HELD, Verdict.HELD)
    assert first.cached([seen, unseen]) == 0
    again = judge_mutants([seen, unseen], how(cache))
    assert again.results[seen.pair].to_json() == {**first.results[seen.pair].to_json(),
                                                  "cached": True}
    assert again.cached([seen, unseen]) == 1  # the other one was judged again, not stored
    assert not again.results[unseen.pair].cached


def test_a_mutant_stops_at_its_first_kill_and_an_unreadable_entry_is_judged_again(tmp_path):
    conc3, conc1 = get_check("ARIB-CONC-003"), get_check("ARIB-CONC-001")
    kill = pair(conc3, "reference_silent_drop_after_close", key="kill")
    after = pair(conc1, "reference_silent_drop_after_close", key="after")
    survive = pair(conc3, "reference_read_crashes", key="survive", store=False)
    then = pair(conc1, "reference_read_crashes", key="then", store=False)
    cache = AdmissionCache(tmp_path)
    (tmp_path / "kill.json").write_text('{"check_id": ')  # torn: never trusted
    judged = judge_mutants([kill, after, survive, then],
                           how(cache, kind="survey", reruns=1, first_kill=True))
    assert judged.results[kill.pair].status is S.KILLED
    assert after.pair in judged.skipped and after.pair not in judged.results  # not run
    assert judged.results[survive.pair].status is S.SURVIVED
    assert then.pair in judged.results  # a survivor goes on to the next check
    assert judged.executions == {kill.pair: 1, survive.pair: 1, then.pair: 1}
    assert judged.unreadable == {kill.pair} and cache.counts["unreadable"] == 1
    again = judge_mutants([kill, after], how(cache, kind="survey", reruns=1, first_kill=True))
    assert again.results[kill.pair].cached and again.executions == {}  # rewritten, readable
    assert again.skipped == {after.pair}


def test_executions_are_split_by_what_they_did():
    from arib.ground.keys import MutantKey, Pair
    from arib.ground.model import MutantKind, MutantResult

    def result(check: str, mutant: str, status: MutantStatus) -> MutantResult:
        return MutantResult(check, mutant, MutantKind.GENERATED, "lane", "d", status, ())

    a, b, c, d = Pair("C1", MutantKey("lane", "m-a")), Pair("C2", MutantKey("lane", "m-a")), (
        Pair("C1", MutantKey("lane", "m-b"))), Pair("C2", MutantKey("lane", "m-b"))
    judged = Judged(
        results={a: result("C1", "m-a", S.SURVIVED), b: result("C2", "m-a", S.KILLED),
                 c: result("C1", "m-b", S.SURVIVED), d: result("C2", "m-b", S.ERROR)},
        executions={a: 2, b: 3, c: 5, d: 7})
    # m-a was killed (by C2, after C1 ran beside it); m-b was killed by no check
    assert judged.executions_by_role([a, b, c, d]) == {
        "executions_unkilled": 12, "executions_killing": 3, "executions_beside_kill": 2}
    assert judged.executions_by_role([a, c]) == {  # m-a is killed only among the pairs given
        "executions_unkilled": 7, "executions_killing": 0, "executions_beside_kill": 0}
    cached = Judged(results={b: result("C2", "m-a", S.KILLED)}, executions={})
    assert cached.executions_by_role([a, b]) == dict.fromkeys(
        ("executions_unkilled", "executions_killing", "executions_beside_kill"), 0)
    # after a pair that did not run, the others still count; a role's executions add up
    e, f = Pair("C3", MutantKey("lane", "m-c")), Pair("C4", MutantKey("lane", "m-c"))
    more = Judged(results={**judged.results, e: result("C3", "m-c", S.SURVIVED),
                           f: result("C4", "m-c", S.KILLED)},
                  executions={**judged.executions, e: 11, f: 13})
    assert more.executions_by_role([Pair("C9", MutantKey("lane", "m-z")), a, b, c, d, e, f]) == {
        "executions_unkilled": 12, "executions_killing": 16, "executions_beside_kill": 13}


def test_a_check_that_names_its_gate_lane_is_gated_there():
    from arib.admission import _reference

    named = dataclasses.replace(get_check("ARIB-CONC-001"), reference="sqlite-file")
    assert _reference(named).name == "sqlite-file"
    assert _reference(get_check("ARIB-CONC-001")) == _reference() == REFERENCE


def _first_runs_only(marker: Any, check_id: str = "ARIB-TEST-FLAKY") -> Any:
    """A check violated in the first run that reaches it and held after (a marker file, shared
    by the forked runs, remembers): a kill that does not repeat."""
    from arib.checks.base import CheckSpec
    from arib.checks.common import trials_param
    from arib.ground.model import Counts, Trial

    async def run_trial(ctx: Any) -> Trial:
        first = not marker.exists()
        marker.touch()
        return Trial(ctx.index, ctx.seed, first, Counts(), mode="first" if first else "later")

    return CheckSpec(id=check_id, invariant="violated once", fault="none",
                     params=(trials_param(1),), run_trial=run_trial, mutants=(),
                     timeout_s=10.0, module=__name__)


def test_a_kill_counts_only_once_it_repeated_in_every_rerun(tmp_path):
    # reruns=1 (the survey's default): a pair violated in it is rerun until it has 3
    kill = pair(get_check("ARIB-CONC-003"), "reference_silent_drop_after_close", key="kill")
    survive = pair(get_check("ARIB-CONC-003"), "reference_read_crashes", key="survive")
    once = pair(_first_runs_only(tmp_path / "ran"), "reference_read_crashes", key="once")
    judged = judge_mutants([kill, survive, once],
                           how(kind="survey", reruns=1, kill_reruns=3))
    assert judged.results[kill.pair].status is S.KILLED
    assert judged.results[kill.pair].runs == (V, V, V) and judged.executions[kill.pair] == 3
    assert judged.results[survive.pair].status is S.SURVIVED
    assert judged.executions[survive.pair] == 1  # a survivor is not rerun
    flaky = judged.results[once.pair]
    assert flaky.status is S.FLAKY and flaky.runs == (V, Verdict.HELD, Verdict.HELD)
    assert flaky.rate == "1/3"
    # kill_reruns 0 (admission's): every pair runs its reruns, no more
    plain = judge_mutants([kill], how(kind="admission", reruns=2))
    assert plain.executions[kill.pair] == 2 and plain.results[kill.pair].status is S.KILLED


def test_a_flaky_kill_does_not_stop_the_mutant_s_other_checks(tmp_path):
    flaky = pair(_first_runs_only(tmp_path / "ran"), "reference_silent_drop_after_close",
                 key="flaky")
    real = pair(get_check("ARIB-CONC-003"), "reference_silent_drop_after_close", key="real")
    judged = judge_mutants([flaky, real], how(kind="survey", reruns=1, kill_reruns=3,
                                              first_kill=True))
    assert judged.results[flaky.pair].status is S.FLAKY
    assert judged.results[real.pair].status is S.KILLED and not judged.skipped
