"""The command line: one clear line and a defined exit code for every bad input."""

from __future__ import annotations

import pytest

from harness.cli import main, parse_params
from harness.errors import ParameterError


def run(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.mark.parametrize("argv, needle", [
    (["bench", "--lanes", "mysql"], "unknown backend lane 'mysql'"),
    (["bench", "--checks", "ARIB-NOPE-001"], "unknown check id 'ARIB-NOPE-001'"),
    (["bench", "--sdk", "9.9.9"], "unavailable SDK version '9.9.9'"),
    (["bench", "--param", "ARIB-CONC-001.writers=0"], "out of range"),
    (["bench", "--param", "writers=8"], "malformed --param 'writers=8'"),
    (["bench", "--param", "ARIB-CONC-001.writers=many"], "non-integer value 'many'"),
    (["bench", "--param", "ARIB-NOPE-001.trials=1"], "unknown check id"),
    (["bench", "--loop", "trio"], "unknown event loop 'trio'"),
    (["run", "--check", "ARIB-CONC-001", "--lane", "nope"], "unknown backend lane 'nope'"),
    (["admit"], "admit needs a check id"),
    (["report", "missing.json"], "cannot read result file"),
    (["survey", "--fail-under", "ninety"], "malformed --fail-under 'ninety'"),
    (["survey", "--fail-under", "90", "--fail-under", "nope-lane=80"],
     "unknown lane 'nope-lane'"),
    (["survey", "--lanes", "mysql"], "unknown backend lane 'mysql'"),
])
def test_bad_input_is_one_line_and_exit_2_or_4(capsys, argv, needle):
    code, out, err = run(capsys, *argv)
    assert code in (2, 4)
    assert needle in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_bad_input_writes_no_result(capsys, tmp_path):
    run(capsys, "bench", "--lanes", "mysql", "--out", str(tmp_path / "r"))
    assert not (tmp_path / "r").exists()


def test_parse_params():
    assert parse_params(["ARIB-CONC-001.writers=4", "ARIB-CONC-001.trials=2"]) == {
        "ARIB-CONC-001": {"writers": 4, "trials": 2}}
    with pytest.raises(ParameterError):
        parse_params(["ARIB-CONC-001.writers"])


def test_run_replays_a_violation(capsys):
    code, out, _ = run(capsys, "run", "--check", "ARIB-REPLAY-001", "--lane", "sqlite-file",
                       "--trial-seed", "12345")
    assert code == 1 and '"verdict": "violated"' in out and "12345" in out


def test_admit_one_check_exit_0(capsys):
    code, out, _ = run(capsys, "admit", "ARIB-REPLAY-001", "--reruns", "1", "--quiet")
    assert code == 0 and "ARIB-REPLAY-001: ADMITTED" in out


def test_list(capsys):
    code, out, _ = run(capsys, "list")
    assert code == 0 and "ARIB-CONC-002" in out and "reference_racy_close" in out


def test_a_malformed_survivors_file_stops_the_survey_naming_the_line(capsys, tmp_path,
                                                                    monkeypatch):
    import harness.survivors
    from harness.execute import sdk_version

    (tmp_path / f"openai-agents-{sdk_version()}.txt").write_text(
        "# header\nsqlite-file m-5f3f4d26671a maybe a reason\n")
    monkeypatch.setattr(harness.survivors, "SURVIVORS_DIR", tmp_path)
    code, _, err = run(capsys, "survey", "--lanes", "reference")
    assert code == 2
    assert "line 2" in err and "unknown category 'maybe'" in err
    assert len(err.strip().splitlines()) == 1


def canned(statuses, error=None):
    """A surveyed reference lane whose mutants got ``statuses`` (no child runs)."""
    from harness.survey_lane import LaneSurvey, MutantOutcome
    from mutants.pool import generated_for_lane

    pool = generated_for_lane("reference").mutants
    outcomes = tuple(MutantOutcome(m, s, "canned", None, {})
                     for m, s in zip(pool[:len(statuses)], statuses, strict=True))
    return LaneSurvey("reference", "targets.reference", "", outcomes, 0, {}, {}, frozenset(),
                      (), {}, error)


@pytest.mark.parametrize("statuses, gate, code, needle", [
    (["killed"] * 9 + ["survived"], ["90"], 0, "gate: reference: covered score 90.0%"),
    (["killed"] * 9 + ["survived"], ["91"], 1, "threshold 91%: BELOW"),
    (["killed"] * 9 + ["survived"], ["50", "reference=95"], 1, "threshold 95%: BELOW"),
    (["killed"] * 9 + ["survived"], [], 0, "surveyed 10 mutants"),
    (["no_coverage"] * 3, [], 4, "the survey judged no mutant"),
])
def test_survey_exit_codes(capsys, monkeypatch, statuses, gate, code, needle):
    import harness.survey
    from harness.model import MutantStatus

    lane = canned([MutantStatus(s) for s in statuses])
    monkeypatch.setattr(harness.survey, "survey", lambda config: (lane,))
    argv = ["survey", "--lanes", "reference", "--quiet"]
    for value in gate:
        argv += ["--fail-under", value]
    got, out, err = run(capsys, *argv)
    assert got == code
    assert needle in out + err


def test_a_lane_in_error_fails_the_survey(capsys, monkeypatch):
    import harness.survey
    from harness.model import MutantStatus

    bad = canned([MutantStatus.ERROR] * 2, error="coverage of ARIB-CONC-001 failed: test")
    monkeypatch.setattr(harness.survey, "survey", lambda config: (bad,))
    code, out, err = run(capsys, "survey", "--lanes", "reference", "--fail-under", "0")
    assert code == 4
    assert "ERROR: not surveyed: coverage of ARIB-CONC-001 failed: test" in out
    assert "reference: lane error: coverage of ARIB-CONC-001 failed: test" in err
