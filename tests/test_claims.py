"""Adapter claims are verified against the runtime object, both ways."""

from __future__ import annotations

from arib.checks.registry import get_check
from arib.execute import RunOptions, run_check
from arib.ground.model import Verdict
from arib.targets.base import Claims, verify_claims
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
