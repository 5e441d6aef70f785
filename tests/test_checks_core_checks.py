"""ARIB-CORRUPT-001, ARIB-RETRY-001, ARIB-LOCK-001 and the stronger ARIB-LIMIT-001, ARIB-ISO-001
and ARIB-POP-001: hold on the reference, killed by their hand-written mutants, abstain where the
runtime object cannot offer the fault, and judge hand-made inputs correctly."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from arib.checks.base import TrialContext
from arib.checks.openai_agents._problems import Problems
from arib.checks.openai_agents._sqlite_faults import LOCKED, ROLLBACK_FAILED, SqliteWatch
from arib.checks.openai_agents.corrupt_001 import Ledger, plan_rows
from arib.checks.openai_agents.limit_001 import Edge, edge_problem, judge_limit
from arib.checks.openai_agents.retry_001 import judge_call
from arib.ground.model import Verdict
from arib.targets.base import BuildContext
from arib.targets.openai_agents.reference import REFERENCE
from arib.targets.registry import get_target
from tests.checkrun import assert_holds_with_its_trials, assert_mutant_violates, run_small

SMALL: dict[str, dict[str, int]] = {
    "ARIB-CORRUPT-001": {"trials": 2, "batches": 3},
    "ARIB-RETRY-001": {"trials": 1, "points": 2},
    "ARIB-LOCK-001": {"trials": 1, "hold_ms": 150},
    "ARIB-LIMIT-001": {"trials": 1, "appends": 4, "reads": 3},
    "ARIB-ISO-001": {"trials": 1, "writers": 1, "appends": 2, "pops": 1, "reads": 1},
    "ARIB-POP-001": {"trials": 1, "poppers": 3, "items": 5},
}


def item(name: str) -> dict[str, str]:
    return {"role": "user", "content": name}


@pytest.mark.parametrize("check_id", ["ARIB-CORRUPT-001", "ARIB-RETRY-001", "ARIB-LOCK-001"])
def test_holds_on_the_reference(check_id: str) -> None:
    assert_holds_with_its_trials(check_id, SMALL[check_id])


@pytest.mark.parametrize(("check_id", "mutant", "mode"), [
    ("ARIB-CORRUPT-001", "reference_decodes_every_row", "read_raised"),
    ("ARIB-RETRY-001", "reference_keeps_failed_transaction", "lock_error_escaped"),
    ("ARIB-LOCK-001", "reference_open_gives_up_on_lock", "lock_error_escaped"),
    ("ARIB-LIMIT-001", "reference_limit_reads_every_session", "peer_items_read"),
])
def test_hand_written_reference_mutant_is_violated(check_id: str, mutant: str,
                                                   mode: str) -> None:
    assert_mutant_violates(check_id, SMALL[check_id], mutant, mode)


@pytest.mark.parametrize(("check_id", "lane", "mutant", "mode"), [
    ("ARIB-CORRUPT-001", "async-sqlite-file", "async_sqlite_pop_gives_up_at_undecodable_row",
     "pop_wrong"),
    ("ARIB-CORRUPT-001", "sqlite-file", "sqlite_limit_counts_undecodable_rows", "wrong_items"),
    ("ARIB-POP-001", "async-sqlite-file", "async_sqlite_pop_left_uncommitted", "not_settled"),
    ("ARIB-LIMIT-001", "sqlite-file", "sqlite_zero_limit_means_all", "wrong_edge"),
    ("ARIB-LIMIT-001", "async-sqlite-file", "async_sqlite_negative_limit_drops_oldest",
     "wrong_edge"),
    ("ARIB-ISO-001", "sqlalchemy-sqlite-file", "sqlalchemy_clear_drops_every_session_record",
     "peer_blocked"),
])
def test_hand_written_sdk_mutant_is_violated(check_id: str, lane: str, mutant: str,
                                             mode: str) -> None:
    clean = run_small(check_id, SMALL[check_id], lane=get_target(lane))
    assert clean.verdict is Verdict.HELD, clean.samples
    finding = run_small(check_id, SMALL[check_id], mutant, lane=get_target(lane))
    assert finding.verdict is Verdict.VIOLATED and mode in finding.modes, finding.modes
    assert finding.ops and finding.replay and "--mutant" in finding.replay


@pytest.mark.parametrize(("check_id", "lane", "reason"), [
    ("ARIB-CORRUPT-001", "sqlite-memory", "':memory:'"),
    ("ARIB-CORRUPT-001", "advanced-sqlite-file", "no way to reach its store"),
    ("ARIB-RETRY-001", "sqlite-memory", "opened no SQLite file"),
    ("ARIB-RETRY-001", "sqlalchemy-sqlite-memory", "opened no SQLite file"),
    ("ARIB-LOCK-001", "sqlalchemy-sqlite-memory", "opened no SQLite file"),
    ("ARIB-ISO-001", "sqlite-memory", "':memory:'"),
])
def test_abstains_where_the_object_cannot_offer_the_fault(check_id: str, lane: str,
                                                          reason: str) -> None:
    finding = run_small(check_id, SMALL[check_id], lane=get_target(lane))
    assert finding.verdict is Verdict.NOT_APPLICABLE, (finding.verdict, finding.samples)
    assert reason in (finding.reason or "")


def test_a_write_after_close_on_a_private_store_is_judged_by_its_refusal() -> None:
    lane = get_target("sqlite-memory")
    assert run_small("ARIB-CONC-003", {"trials": 1}, lane=lane).verdict is Verdict.HELD
    finding = run_small("ARIB-CONC-003", {"trials": 1}, "sqlite_empty_add_skips_closed_check",
                        lane=lane)
    assert finding.verdict is Verdict.VIOLATED
    assert "add([])=silent_drop" in " ".join(finding.modes), finding.modes


# --- ARIB-LIMIT-001 edges and peers --------------------------------------------------------

HISTORY = [item(f"h{n}") for n in range(4)]


def test_edge_reads() -> None:
    assert edge_problem(Edge(0, ()), HISTORY) is None
    assert "expected 0" in (edge_problem(Edge(0, tuple(HISTORY)), HISTORY) or "")
    assert edge_problem(Edge(-1, tuple(HISTORY)), HISTORY) is None
    assert "whole history" in (edge_problem(Edge(-1, tuple(HISTORY[1:])), HISTORY) or "")
    refused = "OperationalError: LIMIT must not be negative"
    assert edge_problem(Edge(-1, None, refused), HISTORY) is None
    assert edge_problem(Edge(-1, None, "TypeError: 'coroutine' object"), HISTORY)
    assert edge_problem(Edge(0, None, "ValueError: limit"), HISTORY)  # 0 is never refused


def test_a_peer_item_in_a_window_is_named() -> None:
    peer = [item("p0")]
    finals = [(2, [HISTORY[-1], peer[0]])]
    verdict = judge_limit(HISTORY, HISTORY, {}, [], finals, peer=peer)
    assert verdict.violated and verdict.mode == "peer_items_read"
    reads = [Edge(1, (peer[0],)), Edge(3, (peer[0],)), Edge(0, ()), Edge(-1, (peer[0],))]
    assert not judge_limit(HISTORY, HISTORY, {}, [], [], peer=peer, peer_reads=reads).violated
    wrong = judge_limit(HISTORY, HISTORY, {}, [], [], peer=peer,
                        peer_reads=[Edge(1, (HISTORY[-1],))])
    assert wrong.mode == "peer_window_wrong"


# --- ARIB-CORRUPT-001 ----------------------------------------------------------------------

def test_corrupt_plan_ends_with_undecodable_rows_and_separates_batches() -> None:
    ctx = TrialContext(REFERENCE, BuildContext(Path("/nonexistent"), "s"), 0, 7,
                       {"batches": 4, "trials": 1})
    plan = plan_rows(ctx, "t")
    assert isinstance(plan[-1], int) and plan[-1] >= 2
    batches = [i for i, step in enumerate(plan) if isinstance(step, list)]
    assert len(batches) == 4
    assert all(isinstance(plan[i - 1], int) for i in batches[1:])


def test_corrupt_ledger_tells_stray_rows_from_wrong_items() -> None:
    ledger = Ledger({"a"})
    ledger.compare("get_items()", [item("x")], [])
    assert ledger.mode == "undecodable_returned" and ledger.foreign == 1
    other = Ledger({'{"content":"h0","role":"user"}'})
    other.compare("get_items(limit=1)", [], [item("h0")])
    assert other.mode == "wrong_items" and other.foreign == 0


# --- ARIB-RETRY-001 ------------------------------------------------------------------------

def judged(op: str, before: list[Any], returned: Any, raised: BaseException | None,
           store: list[Any], fired: bool = True, retries: bool = False,
           locked: str | None = None) -> Problems:
    v = Problems()
    judge_call(op, before, [item("b")], returned, raised, fired, retries, store, store, v,
               "t", locked)
    return v


def test_retry_judgement() -> None:
    before = [item("a0"), item("a1")]
    locked = sqlite3.OperationalError(LOCKED)
    assert not judged("add", before, None, None, [*before, item("b")]).problems
    assert not judged("add", before, None, locked, before).problems
    assert judged("add", before, None, locked, [*before, item("b")]).problems[0][0] \
        == "raised_but_applied"
    assert judged("add", before, None, None, [*before, item("b"), item("b")]).duplicated == 1
    assert judged("add", before, None, locked, before, retries=True).problems[0][0] \
        == "lock_error_escaped"
    assert judged("add", before, None, locked, before, fired=False).problems[0][0] \
        == "raised_unprovoked"
    assert judged("pop", before, item("a0"), None, before[:1]).problems[0][0] == "pop_wrong"
    assert judged("clear", before, None, None, [], locked="store.db").problems[0][0] \
        == "lock_kept"
    hidden = judged("clear", before, None, TypeError("exceptions must derive"), before)
    assert hidden.problems[0][0] == "cause_hidden"
    io = sqlite3.OperationalError(ROLLBACK_FAILED)
    assert not judged("add", before, None, io, before, retries=True).problems


def test_watch_counts_faults_and_sees_a_kept_lock(tmp_path: Path) -> None:
    db = tmp_path / "store.db"
    with SqliteWatch(tmp_path) as watch:
        conn = sqlite3.connect(str(db))
        conn.execute("CREATE TABLE t (x)")
        start = watch.statements
        watch.arm(2, rollback_fails=True)
        conn.execute("INSERT INTO t VALUES (1)")
        with pytest.raises(sqlite3.OperationalError, match=LOCKED):
            conn.execute("INSERT INTO t VALUES (2)")
        assert watch.statements - start == 2
        assert watch.lock_holder() == str(db)  # the first insert's transaction is open
        with pytest.raises(sqlite3.OperationalError, match=ROLLBACK_FAILED):
            conn.rollback()
        arming = watch.disarm()
        assert arming is not None and (arming.fired, arming.rollbacks_failed) == (1, 1)
        conn.rollback()
        assert watch.lock_holder() is None
        outside = sqlite3.connect(":memory:")
        assert str(db) in watch.opened and ":memory:" not in watch.opened
        outside.close()
        conn.close()


def test_watch_fires_repeatedly_and_restores_connect(tmp_path: Path) -> None:
    original = sqlite3.connect
    with SqliteWatch(tmp_path) as watch:
        conn = sqlite3.connect(str(tmp_path / "x.db"), isolation_level=None)
        watch.arm(1, repeats=2)
        for _ in range(2):
            with pytest.raises(sqlite3.OperationalError):
                conn.execute("SELECT 1")
        conn.execute("SELECT 1")  # fired twice: transient, then gone
        conn.close()
    assert sqlite3.connect is original


def test_seeded_choices_are_reproducible() -> None:
    ctx = TrialContext(REFERENCE, BuildContext(Path("/nonexistent"), "s"), 0, 11,
                       {"batches": 3, "trials": 1})
    again = TrialContext(REFERENCE, BuildContext(Path("/nonexistent"), "s"), 0, 11,
                         {"batches": 3, "trials": 1})
    assert plan_rows(ctx, "t") == plan_rows(again, "t")
