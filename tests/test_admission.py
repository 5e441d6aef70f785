"""Admission: killed mutants admit a check, one survivor blocks it, gates stop the run."""

from __future__ import annotations

import dataclasses

import pytest

from arib.admission import AdmissionConfig, admit
from arib.caches.verdicts import AdmissionCache
from arib.checks.base import Selector
from arib.checks.registry import get_check
from arib.ground.errors import GateError
from arib.ground.model import MutantKind, MutantStatus, Trial
from arib.targets.base import NotApplicable


def config(tmp_path, **kw) -> AdmissionConfig:
    # No re-judged sample (verify=0): the 3 % sample is drawn by key, and the keys hold the
    # Python version and the sources, so a test that asserts hits would pass on one
    # interpreter and fail on another (tests/test_cache.py tests the sample itself).
    return AdmissionConfig(reruns=kw.pop("reruns", 2), workers=2, quiet=True,
                           cache=AdmissionCache(tmp_path / "c", verify=0.0), **kw)


def small_conc_003():
    """CONC-003 with hand-written pairs only (generated pairing is tested on its own)."""
    return dataclasses.replace(get_check("ARIB-CONC-003"), generated=())


def handwritten_only(tmp_path, **kw) -> AdmissionConfig:
    return config(tmp_path, generated=False, **kw)


def test_all_killed_admits(tmp_path):
    check = dataclasses.replace(small_conc_003(), mutants=(
        "reference_silent_drop_after_close", "reference_without_close",
        "reference_false_no_close_claim"))
    (a,) = admit([check], handwritten_only(tmp_path))
    assert a.admitted, a.reasons
    assert [r.status for r in a.results] == [MutantStatus.KILLED] * 3
    assert all(r.kind is MutantKind.HANDWRITTEN for r in a.results)


def test_one_survivor_blocks_the_check(tmp_path):
    # A read crash past 50 items cannot show up in a check that writes two items.
    check = dataclasses.replace(small_conc_003(), mutants=(
        "reference_silent_drop_after_close", "reference_read_crashes"))
    (a,) = admit([check], handwritten_only(tmp_path))
    assert not a.admitted
    survivor = [r for r in a.results if r.status is MutantStatus.SURVIVED]
    assert len(survivor) == 1 and survivor[0].diff and "get_items" in survivor[0].diff
    assert any("survived" in reason for reason in a.reasons)


def test_equivalent_waiver_is_shown_and_admits(tmp_path):
    check = dataclasses.replace(
        small_conc_003(), mutants=("reference_silent_drop_after_close", "reference_read_crashes"),
        equivalent={"reference_read_crashes": "this check never reads more than two items"})
    (a,) = admit([check], handwritten_only(tmp_path))
    assert a.admitted
    waived = [r for r in a.results if r.status is MutantStatus.EQUIVALENT]
    assert waived and "never reads more than two items" in (waived[0].evidence or "")


def test_clean_gate_stops_the_run(tmp_path):
    async def always_violated(ctx):
        return Trial(ctx.index, ctx.seed, True)

    check = dataclasses.replace(small_conc_003(), run_trial=always_violated)
    with pytest.raises(GateError, match="clean reference holds") as caught:
        admit([check], handwritten_only(tmp_path, reruns=1))
    # the fix names the reference this check is gated on, in the family it belongs to
    assert str(caught.value).endswith("; fix the check or the reference lane 'reference' "
                                      "(targets/openai_agents/reference.py) before scoring "
                                      "anything")


def test_a_contract_this_sdk_does_not_offer_is_not_admitted_and_does_not_stop_the_run(tmp_path):
    async def not_offered(ctx):
        raise NotApplicable("this SDK's session offers no such protocol (found on the object)")

    check = dataclasses.replace(small_conc_003(), run_trial=not_offered)
    (a,) = admit([check], handwritten_only(tmp_path, reruns=1))
    assert not a.admitted and a.results == ()
    assert a.reasons[0].startswith("does not apply to openai-agents ")
    assert "offers no such protocol" in a.reasons[0]


def test_forced_gate_stops_a_check_that_cannot_fail(tmp_path):
    async def always_held(ctx):
        return Trial(ctx.index, ctx.seed, False)

    check = dataclasses.replace(small_conc_003(), run_trial=always_held)
    with pytest.raises(GateError, match="forced-broken mutant is killed.* gave 'held'"):
        admit([check], handwritten_only(tmp_path, reruns=1))


def test_cache_serves_unchanged_pairs(tmp_path):
    check = dataclasses.replace(small_conc_003(), mutants=("reference_silent_drop_after_close",))
    cfg = handwritten_only(tmp_path)
    (first,) = admit([check], cfg)
    (second,) = admit([check], cfg)
    assert not first.results[0].cached and second.results[0].cached
    assert second.results[0].status is first.results[0].status


def roles_run(monkeypatch) -> list[list[str]]:
    """The roles of the clean-phase jobs of each admit() call, recorded in the parent."""
    import arib.admission as admission

    runs: list[list[str]] = []
    real = admission.run_jobs

    def recording(jobs, **kw):  # type: ignore[no-untyped-def]
        runs.append([job.args[0].role for job in jobs])
        return real(jobs, **kw)

    monkeypatch.setattr(admission, "run_jobs", recording)
    return runs


def test_a_warm_cache_skips_clean_bases_and_passed_gates(tmp_path, monkeypatch):
    runs = roles_run(monkeypatch)
    check = dataclasses.replace(small_conc_003(), mutants=(
        "reference_silent_drop_after_close", "sqlite_silent_drop_after_close"))
    cfg = handwritten_only(tmp_path, reruns=1)
    (first,) = admit([check], cfg)
    (second,) = admit([check], cfg)
    assert runs[0].count("base") == 3 and runs[1].count("base") == 0
    # the gates passed the first time, under the same inputs: cached (tests/test_gate_cache.py)
    assert runs[0].count("clean") == 1 and runs[1] == [] and second.gates_cached
    assert second.admitted and [r.status for r in second.results] == [
        r.status for r in first.results]
    assert all(r.cached for r in second.results)
    # A lane with one pair not in the cache runs its clean base again.
    grown = dataclasses.replace(
        check, mutants=(*check.mutants, "sqlite_persist_then_raise_after_close"))
    admit([grown], cfg)
    assert runs[2].count("base") == 3


def test_a_base_that_broke_in_every_rerun_is_kept_with_a_warm_cache(tmp_path, monkeypatch):
    runs = roles_run(monkeypatch)
    check = dataclasses.replace(get_check("ARIB-REPLAY-001"), mutants=(
        "reference_no_idempotency", "sqlite_silent_drop_after_close"))
    cfg = config(tmp_path, reruns=1, generated=False)
    admit([check], cfg)
    (second,) = admit([check], cfg)
    # its pair's result was never cached, but the base violated 3 of 3 is (arib.caches.bases:
    # tests/test_base_cache.py)
    assert runs[0].count("base") == 3 and runs[1].count("base") == 0
    (bad,) = [r for r in second.results if not r.judgeable]
    assert bad.status is MutantStatus.NOT_JUDGEABLE
    assert "clean 'sqlite-file' gave violated, violated, violated (an earlier run's, reused" in (
        bad.evidence or "")


def test_broken_clean_base_makes_a_kill_meaningless(tmp_path):
    # REPLAY-001 is violated by the clean SQLiteSession, so a mutant of it proves nothing:
    # it is not judgeable here and counts neither for nor against admission.
    check = dataclasses.replace(get_check("ARIB-REPLAY-001"), mutants=(
        "reference_no_idempotency", "sqlite_silent_drop_after_close"))
    (a,) = admit([check], config(tmp_path, reruns=1))
    assert a.admitted, a.reasons
    bad = [r for r in a.results if not r.judgeable]
    assert len(bad) == 1 and bad[0].status is MutantStatus.NOT_JUDGEABLE
    assert "not judgeable" in (bad[0].evidence or "")
    # The clean base ran as often as the survey's: at least 3 times, even with 1 rerun.
    assert "clean 'sqlite-file' gave violated, violated, violated" in (bad[0].evidence or "")
    # The mutant itself is not run: no run of it could count.
    assert bad[0].runs == () and bad[0].duration_s == 0.0
    assert "the mutant is not run" in (bad[0].evidence or "")


def test_a_clean_base_violated_in_one_rerun_only_is_not_judgeable(tmp_path, monkeypatch):
    from arib.execute import derive_seed

    runs = roles_run(monkeypatch)

    base = small_conc_003()
    last = derive_seed(0, "admission", 2)  # the run seed of the third rerun
    seeds = {derive_seed(last, base.id, "sqlite-file", i) for i in range(5)}
    real = base.run_trial

    async def trial(ctx):  # type: ignore[no-untyped-def]
        if ctx.target.name == "sqlite-file" and ctx.seed in seeds:
            return Trial(ctx.index, ctx.seed, True, sample="clean base broke once")
        return await real(ctx)

    check = dataclasses.replace(base, run_trial=trial, mutants=(
        "reference_silent_drop_after_close", "sqlite_silent_drop_after_close"))
    for _ in range(2):
        (a,) = admit([check], handwritten_only(tmp_path, reruns=1))
        (sqlite,) = [r for r in a.results if r.target == "sqlite-file"]
        assert sqlite.status is MutantStatus.NOT_JUDGEABLE and not sqlite.judgeable
        assert "gave held, held, violated" in (sqlite.evidence or "")
    # violated in some reruns only: never kept (arib.caches.bases), run again each time
    assert [r.count("base") for r in runs] == [3, 3]


def test_only_unjudgeable_hand_written_mutants_do_not_admit(tmp_path):
    check = dataclasses.replace(get_check("ARIB-REPLAY-001"),
                                mutants=("sqlite_silent_drop_after_close",))
    (a,) = admit([check], config(tmp_path, reruns=1))
    assert not a.admitted
    assert any("no handwritten mutant is killed" in r for r in a.reasons)


def test_generated_pairs_are_required_and_judged(tmp_path):
    check = dataclasses.replace(
        get_check("ARIB-REPLAY-001"), mutants=("reference_no_idempotency",),
        generated=(Selector("reference", "ReferenceSession.add_items", "early_return"),))
    (a,) = admit([check], config(tmp_path, reruns=1))
    assert a.admitted, a.reasons
    kinds = {r.kind for r in a.results}
    assert kinds == {MutantKind.HANDWRITTEN, MutantKind.GENERATED}
    without = dataclasses.replace(check, generated=())
    (b,) = admit([without], config(tmp_path, reruns=1))
    assert not b.admitted and any("no generated mutant" in r for r in b.reasons)


def test_selector_matching_nothing_is_named_and_the_run_goes_on(tmp_path):
    bad = dataclasses.replace(
        get_check("ARIB-REPLAY-001"), mutants=("reference_no_idempotency",),
        generated=(Selector("reference", "ReferenceSession.nope", "*"),))
    good = dataclasses.replace(small_conc_003(), id="ARIB-CONC-003",
                               mutants=("reference_silent_drop_after_close",))
    first, second = admit([bad, good], handwritten_only(tmp_path, reruns=1))
    second_generated = admit([bad], config(tmp_path, reruns=1))[0]
    assert second.admitted
    assert not second_generated.admitted
    assert any("ReferenceSession.nope" in r and "matches no generated mutant" in r
               for r in second_generated.reasons)
    assert first.check_id == "ARIB-REPLAY-001"


def test_a_selector_of_code_another_sdk_version_lacks_pairs_nothing_there():
    from arib.mutants.pool import SELECTORS_SDK, generated_for_selectors

    check = dataclasses.replace(
        get_check("ARIB-REPLAY-001"),
        generated=(Selector("reference", "ReferenceSession.nope", "*"),
                   Selector("reference", "ReferenceSession.add_items", "early_return")))
    # The pinned version: a definition error.
    mutants, problems = generated_for_selectors(check.generated, SELECTORS_SDK)
    assert len(mutants) == 1 and "ReferenceSession.nope" in problems[0]
    # Another version: that code may not exist there.
    mutants, problems = generated_for_selectors(check.generated, "0.19.2")
    assert len(mutants) == 1 and problems == ()
