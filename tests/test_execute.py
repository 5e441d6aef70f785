"""Running a check: seeds, error findings for harness failures, replay commands."""

from __future__ import annotations

import dataclasses
import os
import tempfile
from pathlib import Path
from typing import Any

import pytest

from arib.checks.base import CheckSpec, Param
from arib.checks.registry import get_check
from arib.execute import RunOptions, child_finding, derive_seed, run_check
from arib.ground.child import ChildOutcome, ChildStatus
from arib.ground.model import Counts, Finding, Trial, Verdict
from arib.mutants.registry import get_mutant
from arib.targets.openai_agents.reference import REFERENCE
from arib.targets.openai_agents.sdk import SQLITE_FILE


def small(check_id: str, **params: int) -> tuple[CheckSpec, RunOptions]:
    check = get_check(check_id)
    return check, RunOptions(params=check.resolve_params(params))


def test_seeds_are_stable_and_distinct():
    assert derive_seed(0, "A", "b", 1) == derive_seed(0, "A", "b", 1)
    assert len({derive_seed(0, "A", "b", i) for i in range(50)}) == 50
    check, opts = small("ARIB-CONC-003", trials=2)
    f = run_check(check, REFERENCE, opts)
    assert f.seeds == opts.seeds(check, REFERENCE)


def test_exception_inside_check_is_an_error_finding_with_traceback():
    async def broken(ctx):
        raise KeyError("bug in the check")

    check = dataclasses.replace(get_check("ARIB-CONC-003"), run_trial=broken)
    f = run_check(check, REFERENCE, RunOptions(params=check.resolve_params()))
    assert f.verdict is Verdict.ERROR
    assert "bug in the check" in (f.reason or "") and "KeyError" in (f.traceback or "")


def test_check_timeout_is_an_error_finding():
    import anyio

    async def slow(ctx):
        await anyio.sleep(30)
        return Trial(ctx.index, ctx.seed, False)

    check = dataclasses.replace(get_check("ARIB-CONC-003"), run_trial=slow, timeout_s=0.2)
    f = run_check(check, REFERENCE, RunOptions(params=check.resolve_params({"trials": 1})))
    assert f.verdict is Verdict.ERROR and "timeout" in (f.reason or "")


def test_unbuildable_target_is_an_error_finding():
    async def cannot(ctx):
        raise ConnectionRefusedError("no server")

    lane = dataclasses.replace(REFERENCE, build=cannot, name="broken-lane")
    check, opts = small("ARIB-CONC-003", trials=1)
    f = run_check(check, lane, opts)
    assert f.verdict is Verdict.ERROR and "could not be built" in (f.reason or "")


def test_violation_carries_replay_command_and_ops():
    check, opts = small("ARIB-REPLAY-001", trials=1)
    f = run_check(check, SQLITE_FILE, opts)
    assert f.verdict is Verdict.VIOLATED
    assert f.replay and "--trial-seed" in f.replay and "--lane sqlite-file" in f.replay
    assert f.ops and "redelivery" in f.ops[0]


def test_replay_seed_reproduces_the_trial():
    check, opts = small("ARIB-REPLAY-001", trials=2)
    first = run_check(check, SQLITE_FILE, opts)
    again = run_check(check, SQLITE_FILE, RunOptions(params=opts.params,
                                                     trial_seeds=(first.seeds[0],)))
    assert again.seeds == (first.seeds[0],)
    assert again.counts.duplicated == first.counts.duplicated // 2


def test_mutant_installed_in_process_breaks_reference():
    # In-process install is only for this test; the harness installs mutants in children.
    from arib.ground.child import run_one

    check, opts = small("ARIB-CONC-002", trials=2)
    mutant = get_mutant("reference_racy_close")
    outcome = run_one(lambda: run_check(check, REFERENCE, opts, mutant), timeout_s=30)
    assert outcome.value.verdict is Verdict.VIOLATED


def test_params_are_recorded():
    check, opts = small("ARIB-CONC-001", writers=2, appends=3, trials=1)
    f = run_check(check, REFERENCE, opts)
    assert f.params["writers"] == 2 and f.params["appends"] == 3 and f.verdict is Verdict.HELD
    assert Param("x", 1, 0, 2, "h").validate("C", 2) == 2


def test_a_trial_that_ignores_cancellation_is_reported_by_the_watchdog():
    import time

    import anyio

    from arib.ground.child import run_one

    async def blocked(ctx):
        # A worker thread that cannot be cancelled, like a write waiting on a database lock.
        await anyio.to_thread.run_sync(time.sleep, 30)
        return Trial(ctx.index, ctx.seed, False)

    check = dataclasses.replace(get_check("ARIB-CONC-003"), run_trial=blocked, timeout_s=0.3)
    opts = RunOptions(params=check.resolve_params({"trials": 1}))
    outcome = run_one(lambda: run_check(check, REFERENCE, opts), timeout_s=25)
    assert outcome.status.value == "ok", outcome.detail  # reported, not killed
    finding = outcome.value
    assert finding.verdict is Verdict.ERROR and finding.timed_out and finding.modes == {}
    assert "did not end when cancelled" in (finding.reason or "")


def test_claims_are_skipped_only_when_already_verified_and_never_for_a_claim_mutant():
    from arib.targets.base import Claims

    check, opts = small("ARIB-CONC-002", trials=1)
    lying = SQLITE_FILE.with_claims(Claims(has_close=False))
    assert run_check(check, lying, opts).verdict is Verdict.ERROR
    skipped = run_check(check, lying, dataclasses.replace(opts, verify_claims=False))
    assert skipped.verdict is Verdict.NOT_APPLICABLE  # judged on the claims as given
    claim_mutant = get_mutant("reference_false_no_close_claim")
    found = run_check(check, REFERENCE, dataclasses.replace(opts, verify_claims=False),
                      claim_mutant)
    assert found.verdict is Verdict.ERROR and "has_close=False" in (found.reason or "")


def test_a_child_that_delivered_gives_its_finding_itself():
    check, opts = small("ARIB-CONC-003", trials=1)
    delivered = Finding(check.id, check.invariant, check.fault, REFERENCE.name, "0.24.0",
                        "3.12.1", Verdict.VIOLATED, 1, 1, Counts(lost=1), (7,), 0.5)
    outcome = ChildOutcome(ChildStatus.OK, delivered, duration_s=9.0)
    assert child_finding(check, REFERENCE, opts, outcome, 5.0) is delivered
    assert child_finding(check, REFERENCE, opts, outcome, 5.0, lane_child=True) is delivered


# Each failed ChildStatus, and the finding it becomes: (reason, timed out) as admission and
# the survey word it, then as the bench words it for a lane's child.
FAILED = [
    (ChildStatus.TIMEOUT, "child killed at its hard time limit (12.3s + grace)", True,
     "lane child timeout: died of SIGKILL"),
    (ChildStatus.CRASH, "child crashed: died of SIGKILL", False,
     "lane child crash: died of SIGKILL"),
    (ChildStatus.RAISED, "child raised out of the harness", False,
     "lane child raised: died of SIGKILL"),
]


@pytest.mark.parametrize("status, reason, timed_out, lane_reason", FAILED)
def test_a_failed_child_is_one_error_finding_naming_its_status(status, reason, timed_out,
                                                               lane_reason):
    check, opts = small("ARIB-CONC-003", trials=1)
    outcome = ChildOutcome(status, detail="died of SIGKILL", duration_s=4.5)
    for finding, why in (
            (child_finding(check, SQLITE_FILE, opts, outcome, 12.34), reason),
            (child_finding(check, SQLITE_FILE, opts, outcome, 12.34, lane_child=True),
             lane_reason)):
        assert finding.verdict is Verdict.ERROR
        assert finding.reason == why and finding.modes == {}  # a timeout is no trial's mode
        assert finding.timed_out is timed_out  # the bench's lane child's too
        assert finding.traceback == "died of SIGKILL" and finding.duration_s == 4.5
        assert (finding.invariant_id, finding.target) == (check.id, SQLITE_FILE.name)
        assert finding.trials == finding.violating_trials == 0 and finding.seeds == ()
        assert finding.params == {**opts.params, "loop": "asyncio", "run_seed": 0}


def test_every_failed_child_status_is_covered_and_long_details_are_cut_for_the_bench():
    assert {row[0] for row in FAILED} == set(ChildStatus) - {ChildStatus.OK}
    check, opts = small("ARIB-CONC-003", trials=1)
    outcome = ChildOutcome(ChildStatus.CRASH, detail="x" * 400)
    lane = child_finding(check, REFERENCE, opts, outcome, 1.0, lane_child=True)
    assert lane.reason == "lane child crash: " + "x" * 300 and lane.traceback == "x" * 400
    plain = child_finding(check, REFERENCE, opts, ChildOutcome(ChildStatus.RAISED), 1.0)
    assert plain.traceback is None and plain.duration_s == 0.0


@pytest.mark.parametrize("on_disk", [False, True])
def test_a_durability_check_works_on_the_real_disk_even_where_runs_use_tmpfs(
        on_disk: bool, tmp_path: Path) -> None:
    from arib.ground import scratch
    from arib.ground.child import run_one

    fast = tmp_path / "fast"  # stands for /dev/shm
    fast.mkdir()
    seen = tmp_path / "root"

    async def trial(ctx: Any) -> Trial:
        seen.write_text(str(ctx.build.root))
        return Trial(ctx.index, ctx.seed, False, Counts())

    check = CheckSpec(id="ARIB-TEST-001", invariant="i", fault="f",
                      params=(Param("trials", 1, 1, 1, "trials"),), run_trial=trial,
                      mutants=(), on_disk=on_disk)
    opts = RunOptions(params=check.resolve_params({}), tmpdir=str(fast), verify_claims=False)
    scratch.prepare()
    scratch.folder(str(fast))
    out = run_one(lambda: run_check(check, REFERENCE, opts), timeout_s=60)
    assert out.status is ChildStatus.OK and out.value.verdict is Verdict.HELD
    root = os.path.realpath(seen.read_text())
    assert root.startswith(os.path.realpath(fast)) is not on_disk
    if on_disk:
        assert root.startswith(os.path.realpath(tempfile.gettempdir()))
