"""arib.ground.schedule.plan and its use by arib.execute: every trial of a concurrent
check records its schedule, a replay of a violation on a controlled lane repeats it exactly
(10 of 10), a schedule that is not the trial's is refused, an enumeration stops once
exhausted, and a concurrent check whose trial started no actor is an error naming it."""

from __future__ import annotations

import dataclasses
import json

import pytest

from arib.checks.base import CheckSpec, SchedulePlan, TrialContext, actors
from arib.checks.registry import get_check
from arib.cli.main import main
from arib.execute import SCHEDULE_MISMATCH, RunOptions, run_check
from arib.ground.child import run_one
from arib.ground.model import Finding, Trial, Verdict
from arib.ground.schedule import Schedule, ScheduleError, TrialPlanner, check_replay
from arib.ground.schedule.record import Decision
from arib.mutants.registry import get_mutant
from arib.targets.openai_agents.reference import REFERENCE

LOST_UPDATE = "reference_lost_update"


def conc(params: dict[str, int], **changes: object) -> tuple[CheckSpec, RunOptions]:
    check = get_check("ARIB-CONC-001")
    return check, RunOptions(params=check.resolve_params(params), **changes)  # type: ignore[arg-type]


def in_child(check: CheckSpec, opts: RunOptions, mutant: str | None = None) -> Finding:
    spec = get_mutant(mutant) if mutant else None
    outcome = run_one(lambda: run_check(check, REFERENCE, opts, spec), 90)
    assert outcome.value is not None, outcome.detail
    return outcome.value  # type: ignore[no-any-return]


def test_every_trial_records_its_schedule_and_the_finding_its_control() -> None:
    check, opts = conc({"writers": 3, "appends": 4, "trials": 2})
    finding = run_check(check, REFERENCE, opts)
    assert finding.verdict is Verdict.HELD and finding.schedule is None
    assert finding.control is not None and finding.control["decisions"] > 0
    assert finding.controlled_share == 1.0
    data = finding.to_json()
    assert data["control"] == finding.control and Finding.from_json(data).to_json() == data


def test_a_replayed_violation_repeats_its_operations_and_reads_10_of_10() -> None:
    check, opts = conc({"writers": 4, "appends": 6, "trials": 3})
    found = in_child(check, opts, LOST_UPDATE)
    assert found.verdict is Verdict.VIOLATED and found.schedule is not None
    assert found.schedule["uncontrolled"] == 0 and "--schedule" in (found.replay or "")
    seed = int(found.replay.split("--trial-seed ")[1].split()[0])  # type: ignore[union-attr]
    schedule = Schedule.parse(found.schedule["text"])
    replay = dataclasses.replace(opts, trial_seeds=(seed,), schedule=schedule)
    runs = [in_child(check, replay, LOST_UPDATE) for _ in range(10)]
    assert all(r.verdict is Verdict.VIOLATED for r in runs)
    assert {(r.ops, r.samples, r.counts) for r in runs} == {(found.ops, runs[0].samples,
                                                              runs[0].counts)}
    assert runs[0].samples[0] == found.samples[0]
    assert all(r.schedule and r.schedule["text"] == found.schedule["text"] for r in runs)


def test_a_schedule_of_another_trial_is_refused_naming_it() -> None:
    check, opts = conc({"writers": 2, "appends": 2, "trials": 1})
    alien = Schedule("random", 1, {"g": 0}, (Decision((9,)),))
    finding = run_check(check, REFERENCE, dataclasses.replace(
        opts, trial_seeds=(5,), schedule=alien))
    assert finding.verdict is Verdict.ERROR and SCHEDULE_MISMATCH in finding.modes
    assert "names actor 9" in (finding.reason or "") and "2 actor(s)" in (finding.reason or "")
    with pytest.raises(ScheduleError, match="has 1 decisions, but this trial took 3"):
        check_replay(Schedule("random", 1, {}, (Decision((0,)),)),
                     Schedule("random", 1, {}, (Decision((0,)),) * 3, ("a",)))


def test_a_concurrent_check_whose_trial_starts_no_actor_is_an_error_naming_it() -> None:
    async def unseen(ctx: TrialContext) -> Trial:
        import anyio

        async with anyio.create_task_group() as tg:  # raced outside the scheduler
            tg.start_soon(anyio.sleep, 0)
        return Trial(ctx.index, ctx.seed, False)

    check = dataclasses.replace(get_check("ARIB-CONC-001"), run_trial=unseen)
    finding = run_check(check, REFERENCE, RunOptions(params=check.resolve_params({"trials": 1})))
    assert finding.verdict is Verdict.ERROR
    assert "'ARIB-CONC-001' is declared concurrent" in (finding.reason or "")
    assert "started no actor" in (finding.reason or "")


def test_an_enumeration_runs_one_seed_and_stops_when_exhausted() -> None:
    async def two_steps(ctx: TrialContext) -> Trial:
        import anyio

        log: list[str] = []

        async def actor(name: str) -> None:
            for i in range(2):
                log.append(f"{name}{i}")
                await anyio.sleep(0)

        async with actors() as group:
            for name in "ab":
                group.start_soon(actor, name)
        return Trial(ctx.index, ctx.seed, False, ops=tuple(log))

    check = dataclasses.replace(get_check("ARIB-CONC-001"), run_trial=two_steps,
                                schedule=SchedulePlan("dfs"))
    finding = run_check(check, REFERENCE, RunOptions(params=check.resolve_params(
        {"trials": 50})))
    assert finding.verdict is Verdict.HELD
    assert finding.trials < 50 and len(set(finding.seeds)) == 1


def test_pct_learns_its_step_estimate_from_the_previous_trial() -> None:
    planner = TrialPlanner(SchedulePlan("pct", {"d": 3}))
    first = planner.scheduler(1, index=1)
    assert first.strategy.params["k"] == 50
    first.decisions.extend([Decision((0,))] * 7)
    planner.done(first)
    assert planner.scheduler(2, index=2).strategy.params["k"] == 7


@pytest.mark.parametrize(("argv", "needle"), [
    (["--schedule", "random.s1:0?", "--trial-seed", "1"], "does not parse at character 11"),
    (["--schedule", "random.s1:01"], "give exactly one --trial-seed"),
    (["--schedule", "lifo.s1:01", "--trial-seed", "1"], "unknown schedule strategy 'lifo'"),
])
def test_run_refuses_a_bad_schedule_in_one_line_exit_2(capsys: pytest.CaptureFixture[str],
                                                        argv: list[str], needle: str) -> None:
    code = main(["run", "--check", "ARIB-CONC-001", "--lane", "reference", *argv])
    err = capsys.readouterr().err
    assert code == 2 and needle in err and len(err.strip().splitlines()) == 1


def test_run_refuses_a_schedule_naming_actors_the_check_does_not_have(
        capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["run", "--check", "ARIB-CONC-001", "--lane", "reference", "--trial-seed", "3",
                 "--param", "ARIB-CONC-001.writers=2", "--param", "ARIB-CONC-001.appends=2",
                 "--schedule", "random.g0.s1:0z"])
    err = capsys.readouterr().err
    assert code == 2 and "names actor 35" in err and len(err.strip().splitlines()) == 1


def test_run_refuses_a_schedule_for_a_check_without_actors(
        capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["run", "--check", "ARIB-REPLAY-001", "--lane", "sqlite-file", "--trial-seed",
                 "1", "--schedule", "random.s1:0"])
    err = capsys.readouterr().err
    assert code == 2 and "starts no actors" in err


def test_run_replays_a_schedule_and_reports_how_often_it_reproduced(
        capsys: pytest.CaptureFixture[str]) -> None:
    check, opts = conc({"writers": 3, "appends": 3, "trials": 4})
    found = in_child(check, opts, LOST_UPDATE)
    assert found.replay is not None and found.schedule is not None
    argv = found.replay.split(" ", 3)[3]  # past "python -m arib"
    import shlex

    code = main([*shlex.split(argv), "--param", "ARIB-CONC-001.writers=3", "--param",
                 "ARIB-CONC-001.appends=3", "--repeat", "2", "--json", "-"])
    out, err = capsys.readouterr()
    assert code == 1 and json.loads(out)["verdict"] == "violated"
    assert "violated in 2 of 2 run(s)" in err and "as the first run in 2 of 2" in err
