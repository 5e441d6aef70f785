"""Running a check: seeds, error findings for harness failures, replay commands."""

from __future__ import annotations

import dataclasses

from checks.base import CheckSpec, Param
from checks.registry import get_check
from harness.execute import RunOptions, derive_seed, run_check
from harness.model import Trial, Verdict
from mutants.registry import get_mutant
from targets.reference import REFERENCE
from targets.sdk import SQLITE_FILE


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
    from harness.child import run_one

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

    from harness.child import run_one

    async def blocked(ctx):
        # A worker thread that cannot be cancelled, like a write waiting on a database lock.
        await anyio.to_thread.run_sync(time.sleep, 30)
        return Trial(ctx.index, ctx.seed, False)

    check = dataclasses.replace(get_check("ARIB-CONC-003"), run_trial=blocked, timeout_s=0.3)
    opts = RunOptions(params=check.resolve_params({"trials": 1}))
    outcome = run_one(lambda: run_check(check, REFERENCE, opts), timeout_s=25)
    assert outcome.status.value == "ok", outcome.detail  # reported, not killed
    finding = outcome.value
    assert finding.verdict is Verdict.ERROR and finding.modes == {"timeout": 1}
    assert "did not end when cancelled" in (finding.reason or "")


def test_claims_are_skipped_only_when_already_verified_and_never_for_a_claim_mutant():
    from targets.base import Claims

    check, opts = small("ARIB-CONC-002", trials=1)
    lying = SQLITE_FILE.with_claims(Claims(has_close=False))
    assert run_check(check, lying, opts).verdict is Verdict.ERROR
    skipped = run_check(check, lying, dataclasses.replace(opts, verify_claims=False))
    assert skipped.verdict is Verdict.NOT_APPLICABLE  # judged on the claims as given
    claim_mutant = get_mutant("reference_false_no_close_claim")
    found = run_check(check, REFERENCE, dataclasses.replace(opts, verify_claims=False),
                      claim_mutant)
    assert found.verdict is Verdict.ERROR and "has_close=False" in (found.reason or "")
