"""``python -m arib results``: the survivors and no_coverage mutants of a written survey."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from arib.cli.main import main
from arib.ground.errors import ResultsError, UsageError
from arib.reports.listing import list_survey, newest_survey, parse_statuses


def _outcome(mid: str, status: str, qualname: str = "S.add_items", lines: str = "10") -> dict:
    return {"id": mid, "status": status, "operator": "drop_await", "qualname": qualname,
            "lines": lines, "reason": "", "checks": {}}


def _write_lane(folder: Path, lane: str, outcomes: list[dict]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{lane}.json"
    path.write_text(json.dumps({"kind": "arib-survey", "lane": lane, "outcomes": outcomes,
                                "scores": {"score_covered": 0.75}}))
    return path


@pytest.fixture
def survey(tmp_path: Path) -> Path:
    folder = tmp_path / "survey"
    _write_lane(folder, "lane-a", [_outcome("m-1", "killed"), _outcome("m-2", "survived"),
                                   _outcome("m-3", "no_coverage", "S.close", "5,9,12"),
                                   _outcome("m-4", "timeout")])
    _write_lane(folder, "lane-b", [_outcome("m-5", "killed")])
    (folder / "mutation-report.json").write_text(json.dumps({"schemaVersion": "2"}))
    return folder


def test_lists_survived_and_no_coverage_per_lane(capsys: pytest.CaptureFixture[str],
                                                  survey: Path) -> None:
    assert main(["results", "--survey", str(survey)]) == 0
    out = capsys.readouterr().out
    assert "lane-a: 1 survived, 1 no_coverage of 4 mutants; covered score 75.0%" in out
    assert "m-2: survived    S.add_items line 10 [drop_await]" in out
    assert "m-3: no_coverage S.close line 5 (+2 more) [drop_await]" in out
    assert "m-1" not in out and "m-4" not in out  # killed and timeout are not asked for
    assert "lane-b: 0 survived, 0 no_coverage of 1 mutants" in out
    assert "2 mutants listed" in out


def test_status_and_lane_narrow_the_listing(survey: Path) -> None:
    (lane,) = list_survey(survey, parse_statuses("timeout,survived"), ["lane-a"])
    assert [(m.mutant_id, m.status) for m in lane.listed] == [("m-4", "timeout"),
                                                              ("m-2", "survived")]


def test_json_to_stdout_is_the_only_output(capsys: pytest.CaptureFixture[str],
                                           survey: Path) -> None:
    assert main(["results", "--survey", str(survey), "--json", "-"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["statuses"] == ["survived", "no_coverage"]
    lanes = {lane["lane"]: [m["id"] for m in lane["listed"]] for lane in document["lanes"]}
    assert lanes == {"lane-a": ["m-2", "m-3"], "lane-b": []}


def test_bad_input_names_the_value(capsys: pytest.CaptureFixture[str], survey: Path,
                                   tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="unknown mutant status 'alive'"):
        parse_statuses("survived,alive")
    assert main(["results", "--survey", str(survey), "--lane", "lane-z"]) == 2
    assert "lane 'lane-z' has no survey" in capsys.readouterr().err
    assert main(["results", "--survey", str(tmp_path / "empty")]) == 4
    assert "no survey lane file in" in capsys.readouterr().err
    with pytest.raises(ResultsError, match="no written survey"):
        newest_survey(tmp_path / "none", tmp_path / "none" / "x")


def test_the_newest_survey_is_this_versions_else_the_last_written(tmp_path: Path) -> None:
    old = _write_lane(tmp_path / "fam-1.0", "lane", [])
    new = _write_lane(tmp_path / "fam-2.0", "lane", [])
    os.utime(old, (1_000, 1_000))
    os.utime(new, (2_000, 2_000))
    assert newest_survey(tmp_path, tmp_path / "fam-3.0") == tmp_path / "fam-2.0"
    assert newest_survey(tmp_path, tmp_path / "fam-1.0") == tmp_path / "fam-1.0"


def test_reads_the_committed_survey(capsys: pytest.CaptureFixture[str]) -> None:
    folder = Path(__file__).parents[1] / "results" / "survey" / "openai-agents-0.24.0"
    if not folder.is_dir():
        pytest.skip("no committed survey of openai-agents 0.24.0")
    assert main(["results", "--survey", str(folder), "--json", "-"]) == 0
    document = json.loads(capsys.readouterr().out)
    for lane in document["lanes"]:
        scores = lane["scores"]
        assert len(lane["listed"]) == scores["survived"] + scores["no_coverage"]
