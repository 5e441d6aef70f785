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
