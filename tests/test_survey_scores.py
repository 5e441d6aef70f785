"""A mutant's status on a lane, the scores, and the --fail-under gate."""

from __future__ import annotations

import pytest

from arib.ground.errors import UsageError
from arib.ground.model import MutantStatus
from arib.survey.scores import FailUnder, Scores, gate, lane_status, parse_fail_under

S = MutantStatus


@pytest.mark.parametrize("pairs, status", [
    ([S.SURVIVED, S.KILLED, S.TIMEOUT], S.KILLED),  # any kill wins
    ([S.SURVIVED, S.TIMEOUT, S.ERROR], S.TIMEOUT),  # a hang seen, never a kill
    ([S.SURVIVED, S.FLAKY], S.FLAKY),
    ([S.SURVIVED, S.ERROR, S.NO_COVERAGE], S.SURVIVED),  # judged and unseen
    ([S.ERROR, S.NO_COVERAGE], S.ERROR),
    ([S.NOT_JUDGEABLE, S.NO_COVERAGE], S.NOT_JUDGEABLE),  # reached only where unjudgeable
    ([S.NO_COVERAGE, S.NO_COVERAGE], S.NO_COVERAGE),
    ([], S.NO_COVERAGE),  # no applicable check at all
])
def test_lane_status(pairs: list[MutantStatus], status: MutantStatus) -> None:
    assert lane_status(pairs) is status


def test_scores_follow_their_definitions() -> None:
    statuses = ([S.KILLED] * 6 + [S.SURVIVED] * 2 + [S.FLAKY, S.TIMEOUT] + [S.ERROR]
                + [S.NO_COVERAGE] * 3 + [S.EQUIVALENT] * 2 + [S.DUPLICATE, S.NOT_APPLICABLE]
                + [S.NOT_JUDGEABLE])
    scores = Scores.of(statuses)
    assert scores.mutants == 19
    # of all: killed / (mutants - equivalent - duplicate - not_applicable) = 6 / 15
    assert scores.score_all == pytest.approx(6 / 15)
    # of covered: killed / (killed + survived + flaky + timeout) = 6 / 10
    assert scores.score_covered == pytest.approx(6 / 10)
    doc = scores.to_json()
    assert doc["killed"] == 6 and doc["no_coverage"] == 3 and doc["not_judgeable"] == 1
    assert doc["score_all"] == 0.4 and doc["score_covered"] == 0.6
    assert "score 40.0% of all, 60.0% of covered" in scores.describe()


def test_a_timeout_or_an_error_is_never_a_kill() -> None:
    scores = Scores.of([S.TIMEOUT, S.ERROR, S.SURVIVED])
    assert scores.score_covered == 0.0 and scores.score_all == 0.0


def test_nothing_judged_has_no_score() -> None:
    scores = Scores.of([S.NO_COVERAGE, S.EQUIVALENT])
    assert scores.score_covered is None
    assert Scores.of([S.EQUIVALENT]).score_all is None
    assert "n/a of covered" in scores.describe()


LANES = ("sqlite-file", "redis-from-url", "reference")


def test_fail_under_takes_a_default_and_lane_overrides() -> None:
    found = parse_fail_under(["90", "redis-from-url=80", "reference=100"], LANES)
    assert found == FailUnder(90.0, {"redis-from-url": 80.0, "reference": 100.0})
    assert found.threshold("sqlite-file") == 90.0
    assert found.threshold("redis-from-url") == 80.0
    assert parse_fail_under([], LANES).threshold("sqlite-file") is None
    assert parse_fail_under(["redis-from-url=80.5"], LANES).threshold("sqlite-file") is None


@pytest.mark.parametrize("values, message", [
    (["ninety"], "'ninety' is not a percentage"),
    (["101"], "'101' is not a percentage"),
    (["-1"], "'-1' is not a percentage"),
    (["sqlite-file="], "'' is not a percentage"),
    (["nope-lane=80"], "unknown lane 'nope-lane'"),
    (["90", "80"], "given twice"),
    (["reference=90", "reference=80"], "lane 'reference' is given twice"),
])
def test_a_malformed_fail_under_is_a_usage_error(values: list[str], message: str) -> None:
    with pytest.raises(UsageError, match=message) as caught:
        parse_fail_under(values, LANES)
    assert repr(values[-1]) in str(caught.value)  # names the offending value
    assert int(caught.value.exit_code) == 2


def test_gate_lines() -> None:
    scores = {"sqlite-file": Scores.of([S.KILLED] * 9 + [S.SURVIVED]),
              "redis-from-url": Scores.of([S.KILLED] * 7 + [S.SURVIVED] * 3),
              "reference": Scores.of([S.NO_COVERAGE])}
    lines = {line.lane: line for line in gate(
        scores, {"other": "lane error: coverage failed"},
        FailUnder(90.0, {"redis-from-url": 80.0}))}
    assert lines["sqlite-file"].passed  # 90.0 >= 90
    assert not lines["redis-from-url"].passed  # 70.0 < 80
    assert "BELOW" in lines["redis-from-url"].describe()
    assert not lines["reference"].passed  # nothing judged is no pass
    assert "nothing judged" in lines["reference"].describe()
    assert not lines["other"].passed and "coverage failed" in lines["other"].describe()
    assert gate(scores, {}, FailUnder()) == ()
