"""The command line: one clear line and a defined exit code for every bad input."""

from __future__ import annotations

import functools
import os
import sys

import pytest

import checks.registry
from harness.bench import run_bench
from harness.cli import main, parse_params
from harness.errors import ParameterError

QUICK = ["bench", "--lanes", "sqlite-file,sqlalchemy-sqlite-file", "--checks",
         "ARIB-REPLAY-001", "--param", "ARIB-REPLAY-001.trials=1", "--reruns", "1", "--quiet"]


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
    (["bench", "--reruns", "0"], "--reruns 0 is below 1"),
    (["bench", "--workers", "0"], "--workers 0 is below 1"),
    (["admit", "--all", "--reruns", "0"], "--reruns 0 is below 1"),
    (["bench", "--lanes", "sqlite-file", "--accept"], "add --partial"),
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


def unwritable_folder(tmp_path):
    if os.geteuid() != 0:
        folder = tmp_path / "read-only"
        folder.mkdir()
        folder.chmod(0o500)
        return folder
    if os.access("/sys", os.W_OK) and not os.path.ismount("/sys"):
        pytest.skip("no folder is unwritable for root here")
    return "/sys"  # sysfs refuses new files, even to root


@pytest.mark.parametrize("make_out", [
    lambda tmp: tmp / "a-file",
    lambda tmp: tmp / "a-file" / "below",
    unwritable_folder,
], ids=["a-file", "below-a-file", "unwritable"])
def test_unusable_out_is_refused_before_anything_is_measured(capsys, tmp_path, monkeypatch,
                                                             make_out):
    (tmp_path / "a-file").write_text("not a folder")
    out = make_out(tmp_path)
    measured = []
    monkeypatch.setattr("harness.bench.admit", lambda *a, **k: measured.append(a) or ())
    code, _, err = run(capsys, *QUICK, "--out", str(out))
    assert code == 2 and measured == []
    assert f"--out {str(out)!r} is not a writable folder" in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_a_check_module_that_cannot_be_imported_is_a_usage_error(capsys, tmp_path, monkeypatch):
    package = tmp_path / "brokenchecks"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "oops_001.py").write_text("CHECK = (\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(checks.registry, "load_checks",
                        functools.partial(checks.registry.load_checks, "brokenchecks"))
    code, _, err = run(capsys, *QUICK, "--out", str(tmp_path / "r"))
    assert code == 2
    assert "check module 'brokenchecks.oops_001' cannot be imported: SyntaxError" in err
    assert "oops_001.py, line 1" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1 and not (tmp_path / "r").exists()
    sys.modules.pop("brokenchecks", None)


def test_a_harness_crash_exits_4_with_one_line_and_the_traceback(capsys, monkeypatch):
    def crash(*_args, **_kwargs):
        raise RuntimeError("registry exploded")

    monkeypatch.setattr(checks.registry, "load_checks", crash)
    code, _, err = run(capsys, "list")
    assert code == 4
    first, *rest = err.strip().splitlines()
    assert first.startswith("error: the harness crashed in `list` with RuntimeError: "
                            "registry exploded")
    assert rest[0] == "Traceback (most recent call last):"


def test_interrupted_bench_says_what_was_written(capsys, tmp_path, monkeypatch):
    def interrupted_at_second_lane(config):
        def stop(check, lane):
            if lane.name == "sqlalchemy-sqlite-file":
                raise KeyboardInterrupt

        import dataclasses

        return run_bench(dataclasses.replace(config, on_lane_start=stop))

    monkeypatch.setattr("harness.bench.run_bench", interrupted_at_second_lane)
    code, _, err = run(capsys, *QUICK, "--out", str(tmp_path))
    assert code == 130
    (written,) = tmp_path.glob("*-openai-agents-*.json")
    assert err.startswith("interrupted") and "the results measured so far were written" in err
    assert str(written) in err and '"complete": false' in written.read_text()


def test_interrupted_before_any_result_says_nothing_was_written(capsys, tmp_path, monkeypatch):
    def interrupt(*_args, **_kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr("harness.bench.admit", interrupt)
    code, _, err = run(capsys, *QUICK, "--out", str(tmp_path))
    assert code == 130 and err.startswith("interrupted")
    assert err.strip().endswith("nothing was written") and len(err.strip().splitlines()) == 1
    assert list(tmp_path.glob("*.json")) == []
