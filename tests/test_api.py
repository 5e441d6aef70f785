"""arib.api: validate() on a user's own stores, the report, and bad input."""

from __future__ import annotations

import anyio
import pytest

from arib.api import DEFAULT_CHECKS, Lane, Report, avalidate, lane, validate
from arib.ground.errors import ParameterError, UnknownNameError, UsageError
from arib.ground.model import Counts, Finding, Verdict
from tests.userstore import faulty
from tests.userstore.stores import json_store, racy_store

CONC = "ARIB-CONC-001"
SMALL = {CONC: {"writers": 4, "appends": 10}}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def finding(check_id: str, verdict: Verdict, **extra: object) -> Finding:
    base: dict[str, object] = dict(
        invariant_id=check_id, invariant=f"the invariant of {check_id}", fault="a fault",
        target="store", sdk_version="0", python_version="3", verdict=verdict, trials=3,
        violating_trials=0, counts=Counts(), seeds=(1, 2, 3), duration_s=0.1)
    return Finding(**{**base, **extra})  # type: ignore[arg-type]


# ----------------------------------------------------------------------- the lane and input

def test_lane_decorates_with_and_without_claims():
    assert isinstance(json_store, Lane) and not json_store.claims.has_close
    assert faulty.sync_close_store.claims.close_is_async
    assert faulty.sync_close_store.spec().name == "sync_close_store"
    assert lane(faulty.raising_store, name="other").name == "other"


def test_misuse_raises_naming_the_value():
    with pytest.raises(UsageError, match="42"):
        lane(42)  # type: ignore[call-overload]
    with pytest.raises(UnknownNameError, match="ARIB-NOPE-001"):
        validate(json_store, checks=["ARIB-NOPE-001"])
    with pytest.raises(ParameterError, match="ARIB-POP-001"):
        validate(json_store, checks=[CONC], params={"ARIB-POP-001": {"poppers": 2}})
    with pytest.raises(ParameterError, match="trials=0"):
        validate(json_store, checks=[CONC], trials=0)
    with pytest.raises(UsageError, match="names no check"):
        validate(json_store, checks=())


# ----------------------------------------------------------------------- the report

def test_report_text_names_invariant_verdict_counts_sample_replay():
    bad = finding(CONC, Verdict.VIOLATED, violating_trials=2, counts=Counts(lost=525),
                  samples=("missing: user 'w5-0'",))
    report = Report("pkg.mod.racy", "racy", 7, (finding("ARIB-POP-001", Verdict.HELD), bad),
                    1.5, {CONC: "validate(pkg.mod.racy, checks=['ARIB-CONC-001'], seed=7, "
                                "trial_seed=99)"})
    text = str(report)
    assert text.splitlines()[0] == ("arib validate pkg.mod.racy: FAILED: 1 violated, 1 held of "
                                    "2 checks (seed 7, 1.5 s)")
    assert "VIOLATED ARIB-CONC-001: 2 of 3 trials violated; lost 525" in text
    assert "the invariant of ARIB-CONC-001" in text and "missing: user 'w5-0'" in text
    assert "trial_seed=99" in text and "held           ARIB-POP-001  3 trials" in text
    assert not report.passed and report.failed == (bad,) and report[CONC] is bad
    assert repr(report) == f"<Report pkg.mod.racy: {report.headline()}>"
    assert report.to_json()["findings"][1]["counts"]["lost"] == 525


def test_a_report_that_measured_nothing_does_not_pass():
    abstained = finding(CONC, Verdict.NOT_APPLICABLE, reason="no close()")
    assert not Report("f", "f", 0, (abstained,), 0.0).passed
    assert not Report("f", "f", 0, (), 0.0).passed
    assert Report("f", "f", 0, (abstained, finding("X", Verdict.HELD)), 0.0).passed


# ----------------------------------------------------------------------- real runs

def test_correct_store_passes():
    report = validate(json_store, checks=[CONC, "ARIB-POP-001"], params=SMALL, trials=2)
    assert report.passed, report
    assert [f.verdict for f in report] == [Verdict.HELD, Verdict.HELD]
    assert report[CONC].trials == 2 and report[CONC].target == "json_store"


def test_racy_store_fails_on_conc_001_and_the_replay_reruns_one_trial():
    report = validate(racy_store, checks=[CONC, "ARIB-POP-001"], params=SMALL)
    assert not report.passed
    assert report[CONC].verdict is Verdict.VIOLATED and report[CONC].counts.lost > 0
    assert report["ARIB-POP-001"].verdict is Verdict.HELD
    replay = report.replays[CONC]
    assert replay.startswith("validate(tests.userstore.stores.racy_store, checks=")
    trial_seed = int(replay.split("trial_seed=")[1].split(",")[0])
    again = validate(racy_store, checks=[CONC], params=SMALL, trial_seed=trial_seed)
    assert again[CONC].trials == 1 and again[CONC].violating_trials == 1


@pytest.mark.parametrize(("factory", "words"), [
    (faulty.raising_store, ["raising_store", "could not be built", "cannot open the store"]),
    (faulty.wrong_type_store, ["tests.userstore.faulty.wrong_type_store", "PosixPath",
                               "get_items, add_items, pop_item, clear_session"]),
    (faulty.denied_close_store, ["has_close=False", "ClosableSession has a callable close",
                                 "@lane(...) on tests.userstore.faulty.denied_close_store"]),
    (faulty.sync_close_store, ["close_is_async=True", "ClosableSession.close is sync"]),
])
def test_bad_factory_is_an_error_finding_naming_it(factory, words):
    report = validate(factory, checks=[CONC], params=SMALL)
    assert report[CONC].verdict is Verdict.ERROR and not report.passed
    for word in words:
        assert word in report[CONC].reason, report[CONC].reason
        assert word in str(report).replace("\n             ", " ")


def test_hanging_store_is_a_timeout_finding_not_a_hung_test():
    report = validate(faulty.hanging_store, checks=[CONC], params=SMALL, timeout_s=1.0)
    assert report[CONC].verdict is Verdict.ERROR
    assert report[CONC].timed_out and report[CONC].modes == {}
    assert "exceeded the check timeout of 1.0s" in report[CONC].reason


def test_crashing_store_is_a_crash_finding():
    report = validate(faulty.crashing_store, checks=[CONC], params=SMALL)
    assert report[CONC].verdict is Verdict.ERROR
    assert "child crashed" in report[CONC].reason and "status 3" in report[CONC].reason


@pytest.mark.anyio
async def test_inside_a_running_event_loop():
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await anyio.sleep(0.01)

    async with anyio.create_task_group() as tg:
        tg.start_soon(ticker)
        report = await avalidate(racy_store, checks=[CONC], params=SMALL)
        tg.cancel_scope.cancel()
    assert report[CONC].verdict is Verdict.VIOLATED
    assert ticks > 1  # the loop ran while the checks did
    # The synchronous call works here too (it blocks the loop for its duration).
    inside = validate(json_store, checks=[CONC], params=SMALL)
    assert inside.passed, (inside[CONC].reason, inside[CONC].traceback)


def test_default_checks_all_held_on_the_correct_store():
    assert len(DEFAULT_CHECKS) == len(set(DEFAULT_CHECKS))
    report = validate(json_store, trials=1)
    assert report.passed, report
    ran = {f.invariant_id for f in report}
    assert ran and ran <= set(DEFAULT_CHECKS) and not ran & set(report.skipped)
    assert set(DEFAULT_CHECKS) <= ran | set(report.skipped)  # each one run or listed
    assert all(f.verdict is Verdict.HELD for f in report)
    assert report.skipped["ARIB-CONC-003"].startswith("needs close()")
