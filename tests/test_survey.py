"""The survey: every applicable check against every generated mutant of a lane."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from checks.registry import get_check
from harness.cache import AdmissionCache
from harness.model import MutantStatus, Verdict
from harness.survey import (
    LaneSurvey,
    SurveyConfig,
    render_text,
    survey,
    survey_mutation_report,
    write_survey,
)
from mutants.pool import generated_for_lane
from targets.reference import REFERENCE

CHECK = "ARIB-CONC-001"
PARAMS = {CHECK: {"writers": 4, "appends": 10, "trials": 2}}


@pytest.fixture(scope="module")
def config() -> SurveyConfig:
    return SurveyConfig(lanes=(REFERENCE,), checks=(get_check(CHECK),), params=PARAMS,
                        quiet=True, cache=AdmissionCache(None))


@pytest.fixture(scope="module")
def lane(config: SurveyConfig) -> LaneSurvey:
    (found,) = survey(config)
    return found


def _status(lane: LaneSurvey, qualname: str, operator: str) -> MutantStatus:
    (mutant,) = [m for m in lane.mutants if (m.qualname, m.operator) == (qualname, operator)]
    (result,) = [r for r in lane.results if r.mutant_id == mutant.id]
    return result.status


def test_every_generated_mutant_is_judged_by_the_applicable_check(lane: LaneSurvey) -> None:
    pool = generated_for_lane(REFERENCE.name).mutants
    assert [m.id for m in lane.mutants] == [m.id for m in pool]
    assert sorted(r.mutant_id for r in lane.results) == sorted(m.id for m in pool)
    assert {r.check_id for r in lane.results} == {CHECK}


def test_known_defects_are_killed_and_unreached_code_survives(lane: LaneSurvey) -> None:
    # An append that returns before writing, or never awaits its write, loses the appends.
    assert _status(lane, "ReferenceSession.add_items", "early_return") is MutantStatus.KILLED
    assert _status(lane, "ReferenceSession.add_items", "drop_await") is MutantStatus.KILLED
    # A write never committed is rolled back when the connection closes.
    assert _status(lane, "ReferenceSession._transact", "drop_commit") is MutantStatus.KILLED
    # Concurrent appends never pop: a pop mutant is invisible to this check.
    assert _status(lane, "ReferenceSession.pop_item", "early_return") is MutantStatus.SURVIVED


def test_score_and_survivors_agree_with_the_results(lane: LaneSurvey) -> None:
    killed = {r.mutant_id for r in lane.results if r.status is MutantStatus.KILLED}
    assert lane.score() == len(killed) / len(lane.mutants)
    assert 0 < lane.score() < 1
    assert {m.id for m in lane.survivors()} == {m.id for m in lane.mutants} - killed
    assert lane.check_scores() == {CHECK: (len(killed), len(lane.mutants))}
    text = render_text([lane], show_diffs=1)
    assert f"{CHECK}: killed {len(killed)}/{len(lane.mutants)}" in text
    assert "--- a/targets.reference" in text  # a survivor's diff


def test_written_results_record_how_they_were_obtained(lane: LaneSurvey, config: SurveyConfig,
                                                       tmp_path: Path) -> None:
    (path,) = write_survey([lane], tmp_path, config)
    doc = json.loads(path.read_text())
    assert doc["kind"] == "arib-survey" and doc["lane"] == REFERENCE.name
    assert doc["run"]["run_seed"] == 0 and doc["run"]["reruns"] == 1
    assert doc["run"]["params"] == PARAMS
    assert "10 x the clean run" in doc["run"]["time_limit"]
    assert len(doc["results"]) == len(lane.results)
    report = survey_mutation_report([lane])
    files = report["files"]
    assert sum(len(f["mutants"]) for f in files.values()) == len(lane.mutants)


def test_a_check_the_clean_lane_fails_is_not_surveyed_there() -> None:
    async def always_violated(ctx):  # type: ignore[no-untyped-def]
        from harness.model import Trial

        return Trial(ctx.index, ctx.seed, True, sample="forced")

    import dataclasses

    broken = dataclasses.replace(get_check(CHECK), run_trial=always_violated)
    (found,) = survey(SurveyConfig(lanes=(REFERENCE,), checks=(broken,), params=PARAMS,
                                   quiet=True, cache=AdmissionCache(None)))
    assert found.results == ()
    assert found.skipped_checks == {CHECK: f"clean backend gave {Verdict.VIOLATED.value}"}


def test_lanes_built_on_one_module_are_judged_apart(monkeypatch: pytest.MonkeyPatch) -> None:
    # Like SQLAlchemy on SQLite and on PostgreSQL: one module, so the same mutant ids.
    import dataclasses

    import harness.survey
    from mutants.generate import generate

    twin = dataclasses.replace(REFERENCE, name="reference-twin")
    lanes = {lane.name: lane for lane in (REFERENCE, twin)}
    monkeypatch.setattr(harness.survey, "generated_for_lane", lambda name: generate(lanes[name]))
    first, second = survey(SurveyConfig(lanes=(REFERENCE, twin), checks=(get_check(CHECK),),
                                        params=PARAMS, quiet=True, cache=AdmissionCache(None)))
    assert [m.id for m in first.mutants] == [m.id for m in second.mutants]
    for found in (first, second):
        assert len(found.results) == len(found.mutants)
        assert {r.target for r in found.results} == {found.lane}
        assert all(len(r.runs) == 1 for r in found.results)  # one rerun, never both lanes'
    report = survey_mutation_report([first, second])
    (entry,) = [m for f in report["files"].values() for m in f["mutants"]
                if m["id"] == first.mutants[0].id]
    assert "[reference] " in entry["statusReason"]
    assert "[reference-twin] " in entry["statusReason"]
