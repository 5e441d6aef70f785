"""The survey: coverage selection, statuses, clean bases, claims, waivers, reports, lanes apart."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from arib.caches.verdicts import AdmissionCache
from arib.checks.registry import get_check
from arib.ground.model import MutantStatus, Trial, Verdict
from arib.judging import KILL_RERUNS
from arib.mutants.base import MutantSpec
from arib.mutants.equivalence import Equivalence
from arib.mutants.generate import generate
from arib.mutants.pool import generated_for_lane
from arib.reports.mutation import validate_mutation_report
from arib.survey.coverage import ModuleLines, Record
from arib.survey.engine import SURVEY_ENGINE, SurveyConfig, survey
from arib.survey.lane import LaneSurvey
from arib.survey.report import render_text, survey_mutation_report, write_survey
from arib.survey.survivors import disagreements, parse_survivors
from arib.targets.base import Claims, Handle, TargetSpec
from arib.targets.openai_agents.reference import REFERENCE

S = MutantStatus
CHECK = "ARIB-CONC-001"
PARAMS = {CHECK: {"writers": 4, "appends": 10, "trials": 2}}
SMALL = {CHECK: {"writers": 2, "appends": 4, "trials": 1}}
POOL = generated_for_lane(REFERENCE.name).mutants


def pick(qualname: str, operator: str, pool: tuple[MutantSpec, ...] = POOL) -> MutantSpec:
    (found,) = [m for m in pool if (m.qualname, m.operator) == (qualname, operator)]
    return found


class _OpenAfterClose:
    """A reference session whose close() does nothing: it stays usable, as documented for
    RedisSession with an injected client."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def close(self) -> None:
        return None


async def _build_open_close(ctx: Any) -> Handle:
    handle = await REFERENCE.build(ctx)

    async def reopen() -> Handle:
        return await _build_open_close(ctx)

    return Handle(_OpenAfterClose(handle.session), reopen, handle.dispose)


OPEN_CLOSE = dataclasses.replace(
    REFERENCE, name="reference-open-close", build=_build_open_close,
    claims=Claims(has_close=True, close_is_async=True, close_is_terminal=False,
                  close_note="test lane: close() is a no-op"))


def twins(monkeypatch: pytest.MonkeyPatch, *lanes: TargetSpec) -> None:
    """Lanes the registry does not know, generated from their own spec."""
    import arib.survey.plan

    by_name = {lane.name: lane for lane in (REFERENCE, *lanes)}
    monkeypatch.setattr(arib.survey.plan, "generated_for_target",
                        lambda spec: generate(by_name[spec.name]))


WAIVED = pick("ReferenceSession.get_items", "drop_lock")  # survives CONC-001
KILLED = pick("ReferenceSession.add_items", "early_return")
UNMAPPED = pick("ReferenceSession.add_items", "drop_await")
EQUIVALENT = pick("ReferenceSession.close", "early_return")
DUPLICATE = pick("ReferenceSession.close", "flip_comparison")


@pytest.fixture(scope="module")
def surveyed() -> tuple[SurveyConfig, tuple[LaneSurvey, ...]]:
    """One survey of two lanes with an equivalence, a duplicate, an unmapped mutant and
    survivors-file entries, run once for the tests below."""
    import arib.survey.plan

    entries = parse_survivors(
        f"reference {WAIVED.id} equivalent the read lock only orders reads with one writer\n"
        f"reference {KILLED.id} blind-spot listed, but killed\n"
        f"reference m-000000000000 dead never generated\n",
        [REFERENCE.name, OPEN_CLOSE.name])
    config = SurveyConfig(lanes=(REFERENCE, OPEN_CLOSE), checks=(get_check(CHECK),),
                          params=PARAMS, quiet=True, cache=AdmissionCache(None),
                          survivors=entries)
    original = ModuleLines.mutant_lines
    with pytest.MonkeyPatch.context() as patch:
        twins(patch, OPEN_CLOSE)
        patch.setattr(arib.survey.plan, "classified", lambda *a: {
            EQUIVALENT.id: Equivalence(EQUIVALENT.id, S.EQUIVALENT, "bytecode-identical: test"),
            DUPLICATE.id: Equivalence(DUPLICATE.id, S.DUPLICATE,
                                      f"bytecode-identical to {KILLED.id}: test", of=KILLED.id),
        })
        patch.setattr(ModuleLines, "mutant_lines", lambda self, spec: None
                      if spec.id == UNMAPPED.id else original(self, spec))
        found = survey(config)
    return config, found


@pytest.fixture(scope="module")
def lane(surveyed: tuple[SurveyConfig, tuple[LaneSurvey, ...]]) -> LaneSurvey:
    return surveyed[1][0]


def status(lane: LaneSurvey, mutant: MutantSpec) -> MutantStatus:
    found = lane.outcome(mutant.id)
    assert found is not None
    return found.status


def test_every_generated_mutant_has_one_outcome(lane: LaneSurvey) -> None:
    assert [o.mutant.id for o in lane.outcomes] == [m.id for m in POOL]
    assert {r.check_id for r in lane.results} == {CHECK}
    # one rerun each, and a kill repeated until it has KILL_RERUNS (only a repeated kill counts)
    assert all(r.target == lane.lane and len(r.runs) == (
        KILL_RERUNS if r.status is S.KILLED else 1) for r in lane.results)


def test_known_defects_are_killed_and_unreached_code_is_not_run(lane: LaneSurvey) -> None:
    assert status(lane, KILLED) is S.KILLED
    assert status(lane, pick("ReferenceSession._transact", "drop_commit")) is S.KILLED
    # Concurrent appends never pop: measured, so the pop mutant is not run at all.
    pop = pick("ReferenceSession.pop_item", "early_return")
    assert status(lane, pop) is S.NO_COVERAGE
    assert not [r for r in lane.results if r.mutant_id == pop.id]
    outcome = lane.outcome(pop.id)
    assert outcome is not None and outcome.lines and not outcome.lines & lane.coverage[CHECK]


def test_the_clean_base_runs_as_often_as_admission(lane: LaneSurvey) -> None:
    assert lane.clean[CHECK].verdicts == (Verdict.HELD,) * 3
    assert lane.clean[CHECK].judgeable


def test_coverage_selection_is_counted(lane: LaneSurvey) -> None:
    ignored = sum(1 for o in lane.outcomes if o.status in (S.EQUIVALENT, S.DUPLICATE,
                                                          S.NOT_APPLICABLE) and not o.waiver)
    assert lane.runs["run"] == sum(len(r.runs) for r in lane.results)  # one check
    assert len(lane.results) + lane.runs["saved_by_coverage"] == len(POOL) - ignored
    assert lane.runs["saved_by_coverage"] == sum(
        1 for o in lane.outcomes if o.status is S.NO_COVERAGE)
    assert lane.runs["saved_by_compiler_or_claims"] == ignored == 2


def test_compiler_equivalents_and_duplicates_are_not_run(lane: LaneSurvey) -> None:
    run = {r.mutant_id for r in lane.results}
    assert status(lane, EQUIVALENT) is S.EQUIVALENT and EQUIVALENT.id not in run
    assert status(lane, DUPLICATE) is S.DUPLICATE and DUPLICATE.id not in run
    duplicate = lane.outcome(DUPLICATE.id)
    assert duplicate is not None and f"({KILLED.id}: killed)" in duplicate.reason


def test_an_unmapped_mutant_is_judged_by_every_check_and_marked(lane: LaneSurvey) -> None:
    assert [r.check_id for r in lane.results if r.mutant_id == UNMAPPED.id] == [CHECK]
    assert [o.mutant.id for o in lane.unmapped()] == [UNMAPPED.id]
    assert f"unmapped (judged by every check): {UNMAPPED.id}" in render_text([lane])


def test_the_survivors_file_is_applied_and_checked(lane: LaneSurvey) -> None:
    waived = lane.outcome(WAIVED.id)
    assert waived is not None and waived.status is S.EQUIVALENT
    assert "waived as equivalent (line 1 of the survivors file)" in waived.reason
    assert waived.checks[CHECK] is S.SURVIVED  # it ran, and it did survive
    problems = lane.survivors_problems()
    assert any(p.startswith(f"line 2: reference {KILLED.id} is no longer a survivor")
               for p in problems)
    assert any(p.startswith("line 3: reference m-000000000000 is no longer generated")
               for p in problems)
    unlisted = {o.mutant.id for o in lane.survivors()}
    assert sum(1 for p in problems if "is not listed" in p) == len(unlisted) > 0


def test_scores_agree_with_the_outcomes(lane: LaneSurvey) -> None:
    scores = lane.scores()
    killed = sum(1 for o in lane.outcomes if o.status is S.KILLED)
    judged = sum(1 for o in lane.outcomes if o.status in (S.KILLED, S.SURVIVED, S.FLAKY,
                                                          S.TIMEOUT))
    assert scores.count(S.KILLED) == killed and scores.covered == judged
    assert scores.score_covered == killed / judged
    assert scores.score_all == killed / (len(POOL) - 3)  # the waiver, equivalent, duplicate
    assert lane.check_scores()[CHECK].count(S.KILLED) == killed


def test_a_lane_whose_close_never_ends_the_session_rules_out_closed_guards(
        surveyed: tuple[SurveyConfig, tuple[LaneSurvey, ...]]) -> None:
    reference, open_close = surveyed[1]
    guards = [m for m in POOL if m.operator == "drop_closed_guard"]
    assert guards
    for guard in guards:
        assert status(open_close, guard) is S.NOT_APPLICABLE
        assert status(reference, guard) is not S.NOT_APPLICABLE
        found = open_close.outcome(guard.id)
        assert found is not None and "does not end the session" in found.reason
        assert "verified on the runtime object" in found.reason


def test_written_results_record_how_they_were_obtained(
        surveyed: tuple[SurveyConfig, tuple[LaneSurvey, ...]], tmp_path: Path) -> None:
    config, lanes = surveyed
    paths = write_survey(lanes, tmp_path, config)
    doc = json.loads(paths[0].read_text())
    assert doc["kind"] == "arib-survey" and doc["engine"] == SURVEY_ENGINE
    assert doc["lane"] == REFERENCE.name and doc["status"] == "ok"
    assert doc["run"]["reruns"] == 1 and doc["run"]["clean_reruns"] == 3
    assert doc["run"]["params"] == PARAMS
    assert "10 x the clean run" in doc["run"]["time_limit"]
    assert doc["coverage"]["checks"][CHECK]  # line ranges per check
    assert doc["coverage"]["unmapped"] == [UNMAPPED.id]
    assert doc["scores"]["killed"] == lanes[0].scores().count(S.KILLED)
    assert doc["clean"][CHECK]["verdicts"] == ["held"] * 3
    # What the committed-file test reads from a lane file gives the same disagreements.
    outcomes = {o["id"]: (o["status"], o["status"] == "equivalent"
                          and o["survivors_file"] is not None) for o in doc["outcomes"]}
    assert disagreements(doc["lane"], config.survivors, outcomes) == \
        lanes[0].survivors_problems() == tuple(doc["survivors_file"]["problems"])


def test_the_mutation_report_keeps_lanes_apart(
        surveyed: tuple[SurveyConfig, tuple[LaneSurvey, ...]]) -> None:
    _, lanes = surveyed
    report = survey_mutation_report(lanes)
    validate_mutation_report(report)
    assert sorted(report["files"]) == ["reference-open-close/targets/openai_agents/reference.py",
                                       "reference/targets/openai_agents/reference.py"]
    entries = {m["id"]: m for f in report["files"].values() for m in f["mutants"]}
    assert len(entries) == 2 * len(POOL)
    pop = pick("ReferenceSession.pop_item", "early_return")
    assert entries[f"reference:{pop.id}"]["status"] == "NoCoverage"
    assert entries[f"reference:{pop.id}"]["coveredBy"] == []
    assert entries[f"reference:{KILLED.id}"]["killedBy"] == [CHECK]
    for ignored in (EQUIVALENT, DUPLICATE, WAIVED):
        assert entries[f"reference:{ignored.id}"]["status"] == "Ignored"
    guard = next(m for m in POOL if m.operator == "drop_closed_guard")
    assert entries[f"reference-open-close:{guard.id}"]["status"] == "Ignored"
    assert "could not be mapped" in entries[f"reference:{UNMAPPED.id}"]["statusReason"]


def test_a_check_the_clean_lane_fails_is_not_judgeable_there() -> None:
    async def always_violated(ctx):  # type: ignore[no-untyped-def]
        return Trial(ctx.index, ctx.seed, True, sample="forced")

    broken = dataclasses.replace(get_check(CHECK), run_trial=always_violated)
    (found,) = survey(SurveyConfig(lanes=(REFERENCE,), checks=(broken,), params=PARAMS,
                                   quiet=True, cache=AdmissionCache(None)))
    assert found.results == ()
    assert found.runs["run"] == 0
    assert found.clean[CHECK].verdicts == (Verdict.VIOLATED,) * 3
    # what a failed clean run's lines would reach is unknown: never "no coverage"
    ignored = {S.EQUIVALENT, S.DUPLICATE, S.NOT_APPLICABLE}
    assert {o.status for o in found.outcomes} - ignored == {S.NOT_JUDGEABLE}
    assert found.scores().count(S.KILLED) == 0
    assert (f"{CHECK}: NOT JUDGEABLE here, its mutants are not run under it: clean "
            f"'reference' gave violated, violated, violated") in render_text([found])


def test_a_failed_coverage_run_makes_its_lane_an_error_and_the_others_go_on(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import arib.survey.engine

    twin = dataclasses.replace(REFERENCE, name="reference-twin")
    twins(monkeypatch, twin)
    real = arib.survey.engine.read_record

    def read(path: str, filename: str) -> Record:
        if ".reference-twin." in str(path) or str(path).rsplit("/", 1)[-1].startswith(
                "reference-twin."):
            return Record(frozenset(), "the line recorder could not start: test")
        return real(path, filename)

    monkeypatch.setattr(arib.survey.engine, "read_record", read)
    good, bad = survey(SurveyConfig(lanes=(REFERENCE, twin), checks=(get_check(CHECK),),
                                    params=SMALL, quiet=True, cache=AdmissionCache(None)))
    assert good.error is None and good.scores().count(S.KILLED) > 0
    assert bad.error is not None and "coverage of ARIB-CONC-001" in bad.error
    assert "could not start: test" in bad.error
    assert {o.status for o in bad.outcomes} == {S.ERROR} and bad.results == ()
    assert "ERROR: not surveyed" in render_text([bad])


def _hang_on_lost_append(hang_kills: bool) -> Any:
    async def trial(ctx):  # type: ignore[no-untyped-def]
        handle = await ctx.open()
        await handle.session.add_items([{"role": "user", "content": "kept?"}])
        if not await handle.session.get_items():
            await anyio.sleep(3600)  # the lost append shows only as a hang
        return Trial(ctx.index, ctx.seed, False)

    base = get_check(CHECK)
    # the trial starts no actors: not a concurrent check, whatever the base check is
    return dataclasses.replace(base, id=f"ARIB-HANG-{int(hang_kills)}", run_trial=trial,
                               hang_invariant=hang_kills, concurrent=False)


@pytest.mark.slow
def test_a_hang_is_a_timeout_and_a_kill_only_where_the_invariant_is_no_hang(
        monkeypatch: pytest.MonkeyPatch) -> None:
    fast = dataclasses.replace(REFERENCE, name="reference-nowait", waits_s=0.0)
    twins(monkeypatch, fast)
    plain, hang = _hang_on_lost_append(False), _hang_on_lost_append(True)
    params = {c.id: {"trials": 1} for c in (plain, hang)}
    (found,) = survey(SurveyConfig(lanes=(fast,), checks=(plain, hang), params=params,
                                   quiet=True, cache=AdmissionCache(None),
                                   first_kill=False))  # each pair's own status
    pool = generate(fast).mutants
    lost = pick("ReferenceSession.add_items", "early_return", pool)
    results = {r.check_id: r for r in found.results if r.mutant_id == lost.id}
    assert results[plain.id].status is S.TIMEOUT  # its own status, never error or kill
    assert results[hang.id].status is S.KILLED  # "does not hang" is this check's invariant
    assert found.check_scores()[plain.id].count(S.TIMEOUT) >= 1
    # It sees nothing but hangs and what a mutant's backend raised out of it (evidence for
    # every check, mode backend_raised): no kill of the plain check rests on a hang.
    plain_kills = [r for r in found.results if r.check_id == plain.id and r.status is S.KILLED]
    assert all("backend_raised" in (r.evidence or "") for r in plain_kills), [
        (r.mutant_id, r.evidence) for r in plain_kills]


@pytest.mark.slow
def test_the_viewer_shows_every_survey_status(tmp_path: Path) -> None:
    import arib.targets.openai_agents.reference
    from arib.ground.model import CleanBase
    from arib.survey.lane import MutantOutcome
    from tests.test_mutation_report import NO_VIEWER, viewer_metrics

    if NO_VIEWER:
        pytest.skip("chromium or npm is not installed")
    statuses = [S.KILLED, S.SURVIVED, S.FLAKY, S.TIMEOUT, S.ERROR, S.NO_COVERAGE, S.EQUIVALENT,
                S.DUPLICATE, S.NOT_APPLICABLE, S.NOT_JUDGEABLE]
    outcomes = tuple(MutantOutcome(m, s, "canned", frozenset({1}), {CHECK: s})
                     for m, s in zip(POOL, statuses, strict=False))
    clean = {CHECK: CleanBase(CHECK, "reference", (Verdict.HELD, Verdict.VIOLATED), 0.1)}
    lane = LaneSurvey("reference", REFERENCE.module,
                      str(arib.targets.openai_agents.reference.__file__), outcomes, 0, clean,
                      {}, frozenset(), (), {})
    shown = viewer_metrics(survey_mutation_report([lane]), tmp_path)
    assert shown["killed"] == 1
    # The survey's own score formula (arib.reports.mutation.STATUS_MAP): a timeout of a check
    # whose invariant is not "does not hang" is not a kill; error and not_judgeable judged
    # nothing, as no_coverage
    assert shown["survived"] == 3  # survived, flaky and timeout
    assert shown["timeout"] == 0 and shown["runtimeErrors"] == 0
    assert shown["noCoverage"] == 3  # error, not_judgeable, no_coverage
    assert shown["ignored"] == 3  # equivalent, duplicate, not_applicable


def test_an_unchanged_pair_is_served_from_the_cache(tmp_path: Path) -> None:
    config = SurveyConfig(lanes=(REFERENCE,), checks=(get_check(CHECK),), params=SMALL,
                          quiet=True,  # verify=0: no hit re-judged, every one served
                          cache=AdmissionCache(tmp_path / "cache", verify=0.0))
    (first,) = survey(config)
    (second,) = survey(config)
    kept = [r for r in first.results if r.status in (S.KILLED, S.SURVIVED, S.TIMEOUT)]
    assert kept and first.runs["cached"] == 0
    assert second.runs["cached"] == len(kept)  # the clean runs' times differ, the key does not
    assert second.runs["run"] == first.runs["run"] - sum(len(r.runs) for r in kept)
    assert [o.status for o in second.outcomes] == [o.status for o in first.outcomes]


def test_cache_lookups_and_check_executions_are_counted(lane: LaneSurvey) -> None:
    runs = lane.runs
    assert runs["pairs"] == len(lane.results)  # no cache: all run (a kill until it repeats)
    assert runs["run"] == sum(len(r.runs) for r in lane.results)
    assert runs["cache_misses"] == runs["pairs"] and runs["cached"] == 0
    assert runs["cache_unreadable"] == 0 and runs["skipped_after_kill"] == 0  # one check
    assert runs["mutants_judged"] == len({r.mutant_id for r in lane.results})
    assert runs["keys_version_bound"] == 0  # every clean run's record ended: inputs named
    assert "check executions:" in render_text([lane])
    killed = {o.mutant.id for o in lane.outcomes if o.status is S.KILLED}
    assert killed and runs["executions_killing"] == sum(
        len(r.runs) for r in lane.results if r.mutant_id in killed)
    assert runs["executions_unkilled"] == sum(
        len(r.runs) for r in lane.results if r.mutant_id not in killed) > 0
    assert runs["executions_beside_kill"] == 0  # one check: it killed every killed mutant
    assert runs["run"] == runs["executions_unkilled"] + runs["executions_killing"]
    assert "beside a kill (a perfect order of checks would save at most these, 0.0%)" in \
        render_text([lane])


def test_the_last_killer_runs_first_then_the_lanes_best_killers_then_by_id() -> None:
    from arib.survey.engine import _ordered

    checks = [dataclasses.replace(get_check(CHECK), id=c) for c in "CAB"]

    def order(hints: dict[str, str | None], kills: dict[str, int]) -> list[str]:
        return [c.id for c in _ordered(KILLED, checks, hints, kills)]

    assert order({}, {}) == ["A", "B", "C"]
    assert order({}, {"A": 2, "C": 1}) == ["A", "C", "B"]
    assert order({KILLED.id: "C"}, {"A": 2}) == ["C", "A", "B"]


def test_a_mutant_stops_at_its_first_kill_unless_every_check_is_asked(tmp_path: Path) -> None:
    checks = (get_check(CHECK), get_check("ARIB-CONC-003"))
    params = {**SMALL, "ARIB-CONC-003": {"trials": 1}}
    one = SurveyConfig(lanes=(REFERENCE,), checks=checks, params=params, quiet=True,
                       cache=AdmissionCache(tmp_path / "a"))
    every = dataclasses.replace(one, first_kill=False, cache=AdmissionCache(tmp_path / "b"))
    (first,) = survey(one)
    (full,) = survey(every)
    assert [o.status for o in first.outcomes] == [o.status for o in full.outcomes]
    assert first.runs["skipped_after_kill"] > 0 == full.runs["skipped_after_kill"]
    ran = {(r.check_id, r.mutant_id) for r in first.results}
    skipped = [r for r in full.results if (r.check_id, r.mutant_id) not in ran]
    assert len(skipped) == first.runs["skipped_after_kill"]
    saved = sum(len(r.runs) for r in skipped)  # what those pairs cost where they ran
    assert first.runs["run"] + saved == full.runs["run"]
    # What first_kill saves is all beside a kill: the unkilled mutants run every check anyway.
    roles = ("executions_unkilled", "executions_killing", "executions_beside_kill")
    for runs in (first.runs, full.runs):
        assert runs["run"] == sum(runs[r] for r in roles)
    assert first.runs["executions_unkilled"] == full.runs["executions_unkilled"]
    assert (full.runs["executions_beside_kill"] - first.runs["executions_beside_kill"]
            + full.runs["executions_killing"] - first.runs["executions_killing"]
            == saved > 0)
    not_run = [o for o in first.outcomes if S.NOT_RUN in o.checks.values()]
    assert not_run and all(o.status is S.KILLED for o in not_run)
    (again,) = survey(one)  # the killers were remembered: nothing runs twice, none skipped
    assert again.runs["run"] == 0 or again.runs["run"] < first.runs["run"]


def test_an_unreadable_cache_entry_is_judged_again_and_counted(tmp_path: Path) -> None:
    config = SurveyConfig(lanes=(REFERENCE,), checks=(get_check(CHECK),), params=SMALL,
                          quiet=True, cache=AdmissionCache(tmp_path / "cache"))
    (first,) = survey(config)
    entries = sorted((tmp_path / "cache").glob("*.json"))
    assert entries
    for entry in entries:
        entry.write_text(entry.read_text()[:20])  # torn, as by a full disk or another tool
    (second,) = survey(dataclasses.replace(config, cache=AdmissionCache(tmp_path / "cache")))
    assert second.runs["cache_unreadable"] == len(entries) and second.runs["cached"] == 0
    assert second.runs["run"] == first.runs["run"]  # every one judged again, none trusted
    assert [o.status for o in second.outcomes] == [o.status for o in first.outcomes]
    assert "unreadable (judged again)" in render_text([second])


def test_clean_runs_are_reused_while_what_they_executed_is_unchanged(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import arib.caches.clean

    config = SurveyConfig(lanes=(REFERENCE,), checks=(get_check(CHECK),), params=SMALL,
                          quiet=True,  # verify=0: no hit re-judged, every one served
                          cache=AdmissionCache(tmp_path / "cache", verify=0.0))
    (first,) = survey(config)
    (second,) = survey(config)
    assert first.clean[CHECK].judgeable and not first.clean[CHECK].reused
    assert second.clean[CHECK].reused and second.clean[CHECK].verdicts == (
        first.clean[CHECK].verdicts)
    assert second.coverage == first.coverage  # the lines that select the mutants' checks
    # the reused inputs give the verdict keys fresh clean runs give: every pair is cached
    kept = [r for r in first.results if r.status in (S.KILLED, S.SURVIVED, S.TIMEOUT)]
    assert second.runs["cached"] == len(kept) and second.runs["run"] == (
        first.runs["run"] - sum(len(r.runs) for r in kept))
    assert [o.status for o in second.outcomes] == [o.status for o in first.outcomes]
    assert "clean bases: 1 of 1 reused" in render_text([second])
    assert second.to_json()["clean"][CHECK]["reused"] is True
    # The same entry where what it executed changed (another SDK version): run again.
    with monkeypatch.context() as patch:
        patch.setattr(arib.caches.clean, "inputs_unchanged", lambda *a: False)
        (changed,) = survey(config)
    assert not changed.clean[CHECK].reused and changed.runs["clean_changed"] == 1
    for entry in (tmp_path / "cache" / "clean").glob("*.json"):
        entry.write_text(entry.read_text()[:20])  # torn
    (torn,) = survey(config)
    assert not torn.clean[CHECK].reused and torn.runs["clean_unreadable"] == 1
    assert "1 unreadable (run again)" in render_text([torn])
    (none,) = survey(dataclasses.replace(config, cache=AdmissionCache(None)))  # --no-cache
    assert not none.clean[CHECK].reused and none.runs["clean_unreadable"] == 0


def test_a_clean_base_that_once_failed_under_its_key_is_never_reused(tmp_path: Path) -> None:
    async def always_violated(ctx):  # type: ignore[no-untyped-def]
        return Trial(ctx.index, ctx.seed, True, sample="forced")

    cache = tmp_path / "cache"
    broken = dataclasses.replace(get_check(CHECK), run_trial=always_violated)  # same source
    config = SurveyConfig(lanes=(REFERENCE,), checks=(broken,), params=SMALL, quiet=True,
                          cache=AdmissionCache(cache))
    survey(config)
    fine = dataclasses.replace(config, checks=(get_check(CHECK),))
    for _ in range(2):  # held both times, and still measured again
        (found,) = survey(fine)
        assert found.clean[CHECK].judgeable and not found.clean[CHECK].reused
        assert found.runs["clean_unstable"] == 1
    assert "1 once did not hold (never reused)" in render_text([found])


def test_a_kill_that_did_not_repeat_is_flaky_with_its_rate(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import arib.survey.engine

    real = arib.survey.engine.judge_mutants

    def one_flaky(pairs, how):  # type: ignore[no-untyped-def]
        judged = real(pairs, how)
        slot = next(s for s, r in judged.results.items() if r.status is S.KILLED)
        results = dict(judged.results)
        results[slot] = dataclasses.replace(results[slot], status=S.FLAKY, runs=(
            Verdict.VIOLATED, Verdict.HELD, Verdict.VIOLATED))
        return dataclasses.replace(judged, results=results)

    monkeypatch.setattr(arib.survey.engine, "judge_mutants", one_flaky)
    config = SurveyConfig(lanes=(REFERENCE,), checks=(get_check(CHECK),), params=SMALL,
                          quiet=True, cache=AdmissionCache(None))
    (lane,) = survey(config)
    [flaky] = [o for o in lane.outcomes if o.status is S.FLAKY]
    assert flaky.reason == (f"flaky: violated in some reruns only ({CHECK} in 2/3 reruns), "
                            f"so not a kill")
    assert lane.scores().count(S.KILLED) == sum(1 for o in lane.outcomes
                                                if o.status is S.KILLED)
    assert config.to_json()["kill_reruns"] == KILL_RERUNS == 3
