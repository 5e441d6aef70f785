"""`nox -s ecosystem`'s plan (harness/dev/ecosystem.py): which locks and lanes a run measures,
the locks' recorded headers, the closing summary, and when the session fails (nothing
measured, or a bench that did not exit 0 or 1); the table agrees with the lanes the package
targets/ecosystem declares, and its locks exist and say what they pin."""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path

import pytest

from arib.dev import ecosystem as eco

ROOT = Path(__file__).resolve().parent.parent


def test_every_lane_by_default_grouped_by_lock_and_options_passed_on() -> None:
    plan = eco.plan(["--checks", "ARIB-CKPT-001"])
    assert [entry.name for entry, _ in plan.groups] == ["lg-duckdb", "lg-lmdb", "lg-plainredis",
                                                        "lg-mysql", "oas-redis"]
    assert [lane for _, lanes in plan.groups for lane in lanes] == list(eco.every_lane())
    assert plan.rest == ("--checks", "ARIB-CKPT-001") and not plan.lock and plan.out is None


def test_lanes_name_one_lane_or_a_lock_and_out_is_taken() -> None:
    plan = eco.plan(["--lanes", "lg-duckdb-async,lg-lmdb", "--out", "/tmp/x"])
    assert [(e.name, lanes) for e, lanes in plan.groups] == [
        ("lg-duckdb", ("lg-duckdb-async",)), ("lg-lmdb", ("lg-lmdb", "lg-lmdb-async"))]
    assert plan.out == "/tmp/x" and plan.rest == ()
    assert [e.name for e, _ in eco.plan(["--lock", "lg-plainredis"]).groups] == ["lg-plainredis"]
    assert eco.plan(["--lock"]).lock and len(eco.plan(["--lock"]).groups) == len(eco.ECOSYSTEM)


def test_an_unknown_lane_is_refused_naming_it_and_the_known() -> None:
    with pytest.raises(eco.EcosystemError) as caught:
        eco.plan(["--lanes", "lg-nosuch"])
    assert "'lg-nosuch'" in str(caught.value) and "lg-duckdb-async" in str(caught.value)


def _outcome(code: int | None, why: str = "") -> eco.Outcome:
    entry = eco.ECOSYSTEM[0]
    return eco.Outcome(entry, entry.lanes, code, why)


def test_the_session_fails_only_when_nothing_was_measured_or_a_bench_failed() -> None:
    unbuilt = _outcome(None, "its environment could not be built (uv pip sync x.txt): boom")
    assert unbuilt.line() == ("lg-duckdb, lg-duckdb-async: not measured, because its "
                              "environment could not be built (uv pip sync x.txt): boom")
    assert eco.verdict([unbuilt, _outcome(1)]) is None  # the rest went on and measured
    assert eco.verdict([_outcome(0)]) is None
    nothing = eco.verdict([unbuilt])
    assert nothing is not None and nothing.startswith("nothing was measured: ")
    failed = eco.verdict([_outcome(0), _outcome(4)])
    assert failed is not None and "bench exit 4" in failed


@pytest.mark.parametrize("family", ["langgraph", "openai-agents"])
def test_the_table_names_the_lanes_the_package_declares(
        family: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(ROOT / "targets" / "ecosystem"))
    try:
        module = importlib.import_module(f"arib_ecosystem.{family.replace('-', '_')}")
        declared = [lane.name for lane in module.LANES]
    finally:
        for name in [n for n in sys.modules if n.split(".")[0] == "arib_ecosystem"]:
            sys.modules.pop(name, None)
    assert declared == [lane for e in eco.ECOSYSTEM if e.family == family for lane in e.lanes]
    assert all(name.startswith(e.name) for e in eco.ECOSYSTEM for name in e.lanes)


@pytest.mark.parametrize("entry", eco.ECOSYSTEM, ids=lambda e: e.name)
def test_each_lock_exists_pins_its_package_and_says_what_it_requires(entry: eco.EcoLock) -> None:
    text = eco.lock_path(ROOT, entry).read_text()
    top = [line for line in text.splitlines() if line.startswith("#")]
    assert top[:len(entry.header())] == entry.header()
    assert f"{entry.requirement}\n" in text  # the package, pinned, in the lock itself
    assert entry.requires in top[0]


class _Log:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def log(self, line: str) -> None:
        self.lines.append(line)


def test_a_lock_whose_environment_cannot_be_built_is_not_measured_with_the_cause(
        tmp_path: Path) -> None:
    entry = eco.ECOSYSTEM[1]
    env, why = eco.build_env(_Log(), "uv", Path(sys.executable), tmp_path, entry,
                             tmp_path / "env")
    assert env is None
    assert why == ("its lock harness/locks/ecosystem/lg-lmdb.txt does not exist (compile it: "
                   "nox -s ecosystem -- --lock lg-lmdb)")
    lock = eco.lock_path(tmp_path, entry)
    lock.parent.mkdir(parents=True)
    lock.write_text("no-such-package-for-arib-tests==0.0.0\n")
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "targets" / "ecosystem").mkdir(parents=True)
    (tmp_path / "targets" / "ecosystem" / "pyproject.toml").write_text("")
    log = _Log()
    env, why = eco.build_env(log, "false", Path(sys.executable), tmp_path, entry,
                             tmp_path / "env")  # `false` stands in for a uv that fails
    assert env is None and why.startswith("its environment could not be built (uv venv)")
    assert log.lines and not (tmp_path / "env" / ".lock-sha").exists()


def test_after_the_benches_each_measured_lock_confirms_then_each_family_gets_its_table(
        tmp_path: Path) -> None:
    root = tmp_path / "checkout"
    repro = root.joinpath(*eco.REPRO)
    repro.mkdir(parents=True)
    for name in ("lg-lmdb--ARIB-CKPT-004.py", "lg-duckdb--ARIB-CKPT-005.py", "notes.py"):
        (repro / name).write_text("raise SystemExit(1)\n")
    out = tmp_path / "out"
    (out / "lg-lmdb").mkdir(parents=True)
    for stamp, verdict in (("2026-12-06T100000Z", "held"), ("2026-12-06T110000Z", "violated")):
        (out / "lg-lmdb" / f"{stamp}-x-langgraph-v.json").write_text(json.dumps({"findings": [
            {"invariant_id": "ARIB-CKPT-004", "target": "lg-lmdb", "verdict": verdict},
            {"invariant_id": "ARIB-CKPT-001", "target": "lg-lmdb", "verdict": "held"}]}))
    # what an earlier session's follow-ups wrote beside the runs is no run (it sorts last)
    (out / "lg-lmdb" / "parity.json").write_text(json.dumps({"kind": "parity", "lanes": []}))
    by_name = {e.name: e for e in eco.ECOSYSTEM}
    outcomes = [eco.Outcome(by_name["lg-lmdb"], ("lg-lmdb",), 1),
                eco.Outcome(by_name["lg-duckdb"], ("lg-duckdb",), None, "no env"),
                eco.Outcome(by_name["lg-plainredis"], ("lg-plainredis",), 4)]
    steps = eco.follow_ups(root, out, outcomes, {"lg-lmdb": tmp_path / "env"})
    assert [label for label, _ in steps] == [
        "confirm lg-lmdb", "rerun lg-lmdb seed 1", "rerun lg-lmdb seed 2", "survey lg-lmdb",
        "parity lg-lmdb", "official lg-lmdb", "report langgraph"]
    confirm, rerun, _, survey, parity, official, report = (command for _, command in steps)
    # the checks the newest run found violated, under another run seed, into reruns/
    assert rerun[rerun.index("--checks") + 1] == "ARIB-CKPT-004"
    assert rerun[rerun.index("--seed") + 1] == "1"
    assert rerun[rerun.index("--out") + 1] == str(out / "lg-lmdb" / "reruns")
    assert parity[parity.index("--out") + 1] == str(out / "lg-lmdb" / "parity.json")
    assert parity[parity.index("--results") + 1] == str(out / "lg-lmdb" / "parity")
    assert survey[survey.index("--out") + 1] == str(out / "lg-lmdb" / "survey")
    assert official[official.index("--out") + 1] == str(out / "lg-lmdb")
    assert str(repro / "lg-lmdb--ARIB-CKPT-004.py") in confirm
    assert not any("duckdb" in part for part in confirm)  # not measured: nothing to confirm
    assert report[report.index("--runs") + 1].endswith("2026-12-06T110000Z-x-langgraph-v.json")
    assert str(out / "confirmations-langgraph.json") in report


REPRO = ROOT / "targets" / "ecosystem" / "repro"


def test_each_reproduction_script_names_a_third_party_lane_and_a_check() -> None:
    from arib.reports.ecosystem import script_key

    scripts = sorted(p for p in REPRO.glob("*.py") if not p.name.startswith("_"))
    assert scripts
    lanes = set(eco.every_lane())
    for script in scripts:
        check, _, lane = script_key(script).partition(" on ")
        assert lane in lanes, script.name
        assert check.startswith("ARIB-"), script.name
        assert "run(" in script.read_text(), f"{script.name} exits through _repro.run"


@pytest.mark.parametrize(("outcome", "code"), [(True, 1), (False, 0), (None, 2)])
def test_a_reproduction_exits_1_when_seen_0_when_not_and_2_when_it_crashed(
        outcome: bool | None, code: int, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.syspath_prepend(str(REPRO))
    import _repro

    def main() -> bool:
        if outcome is None:
            raise RuntimeError("the store went away")
        return outcome

    with pytest.raises(SystemExit) as stop:
        _repro.run(main)
    assert stop.value.code == code
    said = capsys.readouterr().out
    assert {1: "REPRODUCED", 0: "NOT REPRODUCED", 2: "CRASHED"}[code] in said
