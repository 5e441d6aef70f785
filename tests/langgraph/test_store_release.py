"""ARIB-LGSTORE-011 (a store left while calls are in flight) and ARIB-LGSTORE-012 (the TTL
sweeper released with the store): each holds on our reference store, kills its mutants, and
finds what langgraph-checkpoint-sqlite 3.1.2 does (the application crashes; the sweeper
outlives the closed connection)."""

from __future__ import annotations

import pytest

from arib.ground.model import Verdict
from arib.targets.base import TargetSpec
from arib.targets.langgraph.lanes import (
    STORE_ASYNC_SQLITE_FILE,
    STORE_MEMORY,
    STORE_REFERENCE,
    STORE_SQLITE_FILE,
)
from tests.checkrun import run_small
from tests.langgraph.test_store_checks import SMALL


def _run(check_id: str, lane: TargetSpec, mutant: str | None = None):
    return run_small(check_id, SMALL[check_id], mutant, lane)


@pytest.mark.parametrize("check_id", ["ARIB-LGSTORE-011", "ARIB-LGSTORE-012"])
def test_holds_on_the_reference_store_and_abstains_on_the_memory_store(check_id: str) -> None:
    held = _run(check_id, STORE_REFERENCE)
    assert held.verdict is Verdict.HELD, held.samples
    absent = _run(check_id, STORE_MEMORY)
    assert absent.verdict is Verdict.NOT_APPLICABLE
    assert "InMemoryStore has no from_conn_string()" in (absent.reason or "")


@pytest.mark.parametrize(("check_id", "mutant", "mode"), [
    ("ARIB-LGSTORE-011", "lg_store_reference_dispose_keeps_the_lock", "hung"),
    ("ARIB-LGSTORE-012", "lg_store_reference_exit_keeps_sweeper", "leaked"),
])
def test_its_mutants_are_violated(check_id: str, mutant: str, mode: str) -> None:
    finding = _run(check_id, STORE_REFERENCE, mutant)
    assert finding.verdict is Verdict.VIOLATED, finding.samples
    assert mode in finding.modes


def test_leaving_a_sqlite_store_with_calls_in_flight_crashes_the_application() -> None:
    """A real finding: SqliteStore.from_conn_string closes its sqlite3 connection on exit
    without the store's lock, under the calls of other threads: SIGSEGV (Python 3.12's
    sqlite3)."""
    finding = _run("ARIB-LGSTORE-011", STORE_SQLITE_FILE)
    assert finding.verdict is Verdict.VIOLATED, finding.samples
    assert "killed by SIGSEGV" in finding.samples[0]
    assert finding.replay and "--trial-seed" in finding.replay


@pytest.mark.parametrize(("lane", "failed"), [
    (STORE_SQLITE_FILE, "Cannot operate on a closed database"),
    (STORE_ASYNC_SQLITE_FILE, "no active connection"),
])
def test_the_sqlite_stores_leak_their_sweeper(lane: TargetSpec, failed: str) -> None:
    finding = _run("ARIB-LGSTORE-012", lane)
    assert finding.verdict is Verdict.VIOLATED, finding.samples
    assert "still runs" in finding.samples[0] and failed in finding.samples[0]
