"""Adapter claims are verified against the runtime object, both ways."""

from __future__ import annotations

import anyio
import pytest

from arib.checks.registry import get_check
from arib.execute import RunOptions, run_check
from arib.ground.model import Verdict
from arib.targets.base import Claims, quiet_close, verify_claims
from arib.targets.openai_agents.reference import REFERENCE
from arib.targets.openai_agents.sdk import SQLALCHEMY_SQLITE_FILE, SQLITE_FILE


class WithSyncClose:
    def close(self) -> None:
        pass


class WithAsyncClose:
    async def close(self) -> None:
        pass


class WithoutClose:
    pass


def test_true_claims_pass():
    assert verify_claims(SQLITE_FILE, WithSyncClose()) is None
    assert verify_claims(REFERENCE, WithAsyncClose()) is None
    assert verify_claims(SQLALCHEMY_SQLITE_FILE, WithoutClose()) is None


def test_claimed_close_that_is_missing_is_named():
    message = verify_claims(SQLITE_FILE, WithoutClose())
    assert message is not None and "has_close=True" in message and "sqlite-file" in message


def test_denied_close_that_exists_is_named():
    message = verify_claims(SQLALCHEMY_SQLITE_FILE, WithSyncClose())
    assert message is not None and "has_close=False" in message


def test_sync_async_mismatch_is_named():
    message = verify_claims(SQLITE_FILE, WithAsyncClose())
    assert message is not None and "close_is_async=False" in message


def test_false_claim_on_real_backend_is_an_error_finding():
    check = get_check("ARIB-CONC-002")
    lying = SQLITE_FILE.with_claims(Claims(has_close=False))
    finding = run_check(check, lying, RunOptions(params=check.resolve_params({"trials": 1})))
    assert finding.verdict is Verdict.ERROR
    assert "has_close=False" in (finding.reason or "")


def test_claimed_close_missing_on_real_backend_is_an_error_finding():
    check = get_check("ARIB-CONC-003")
    lying = SQLALCHEMY_SQLITE_FILE.with_claims(Claims(has_close=True, close_is_async=True))
    finding = run_check(check, lying, RunOptions(params=check.resolve_params({"trials": 1})))
    assert finding.verdict is Verdict.ERROR
    assert "has_close=True" in (finding.reason or "")


def test_honest_missing_close_abstains():
    check = get_check("ARIB-CONC-003")
    finding = run_check(check, SQLALCHEMY_SQLITE_FILE,
                        RunOptions(params=check.resolve_params({"trials": 1})))
    assert finding.verdict is Verdict.NOT_APPLICABLE
    assert finding.trials == 0 and "no close()" in (finding.reason or "")


class Recording:
    """A store whose close() records that it ran, then does what ``how`` says."""

    def __init__(self, how: str) -> None:
        self.how, self.closed = how, 0

    def close(self):  # type: ignore[no-untyped-def]
        self.closed += 1
        if self.how == "raises":
            raise RuntimeError("close failed")
        if self.how == "async":
            async def done() -> None:
                self.closed += 1
            return done()
        return None


@pytest.mark.parametrize("how, closed", [("sync", 1), ("async", 2), ("raises", 1)])
def test_quiet_close_closes_either_way_and_a_failing_close_is_not_raised(how, closed):
    store = Recording(how)
    anyio.run(quiet_close, store)
    assert store.closed == closed  # an async close was awaited (2: called, then run)


def test_quiet_close_leaves_a_store_without_close_alone():
    anyio.run(quiet_close, WithoutClose())
    odd = WithoutClose()
    odd.close = "not callable"  # type: ignore[attr-defined]
    anyio.run(quiet_close, odd)
