"""The LangGraph fault checks (ARIB-LGCONC-001/002, ARIB-LGDUR-001, ARIB-LGCANCEL-001): each
holds on lg-reference and kills its hand-written mutants; their verdicts on the real lanes; the
read-back judge on hand-made outcomes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from checks.base import TrialContext
from checks.langgraph._faults import Op, judge
from checks.registry import get_check
from harness.ground.model import Finding, Verdict
from mutants.registry import get_mutant
from targets.base import BuildContext, Claims, Handle, TargetSpec
from targets.langgraph.lanes import (
    ASYNC_SQLITE_FILE,
    ASYNC_SQLITE_MEMORY,
    MEMORY,
    REFERENCE,
    SQLITE_FILE,
)
from tests.checkrun import run_small

SMALL: dict[str, dict[str, int]] = {
    "ARIB-LGCONC-001": {"trials": 2, "writers": 4, "steps": 3, "threads": 2},
    "ARIB-LGCONC-002": {"trials": 1, "processes": 3, "steps": 3, "threads": 2},
    "ARIB-LGDUR-001": {"trials": 2, "steps": 5},
    "ARIB-LGCANCEL-001": {"trials": 1, "points": 6},
    "ARIB-LGDEL-001": {"trials": 2, "steps": 2},
    "ARIB-LGSETUP-001": {"trials": 1, "processes": 3, "steps": 1},
    "ARIB-LGCLOSE-001": {"trials": 2, "writers": 2, "steps": 3},
}


def _run(check_id: str, lane: TargetSpec = REFERENCE, mutant: str | None = None) -> Finding:
    return run_small(check_id, SMALL[check_id], mutant, lane)


@pytest.mark.parametrize("check_id", sorted(SMALL))
def test_holds_on_the_reference(check_id: str) -> None:
    finding = _run(check_id)
    assert finding.verdict is Verdict.HELD, (finding.samples, finding.reason)
    assert finding.trials == SMALL[check_id]["trials"]


@pytest.mark.parametrize(("check_id", "mutant", "mode"), [
    ("ARIB-LGCONC-001", "lg_reference_writes_follow_last_put", "tasks:lossy"),
    ("ARIB-LGDUR-001", "lg_reference_write_behind", "acked_lost"),
    ("ARIB-LGCANCEL-001", "lg_reference_cancel_half_writes", "partial"),
    ("ARIB-LGDEL-001", "lg_reference_delete_keeps_writes", "tasks:deleted_came_back"),
    ("ARIB-LGSETUP-001", "lg_reference_schema_not_idempotent", "setup_failed"),
    ("ARIB-LGCLOSE-001", "lg_reference_exit_leaves_a_scratch_store",
     "tasks:accepted_after_exit_then_lost"),
])
def test_a_reference_mutant_is_violated(check_id: str, mutant: str, mode: str) -> None:
    finding = _run(check_id, mutant=mutant)
    assert finding.verdict is Verdict.VIOLATED, finding.samples
    assert mode in finding.modes
    assert finding.ops and finding.replay and "--mutant" in finding.replay


@pytest.mark.slow
@pytest.mark.parametrize(("check_id", "lane", "mutant", "mode"), [
    ("ARIB-LGCONC-001", SQLITE_FILE, "lg_sqlite_writes_to_latest", "threads:lossy"),
    ("ARIB-LGCONC-001", ASYNC_SQLITE_FILE, "lg_async_sqlite_writes_to_latest", "tasks:lossy"),
    ("ARIB-LGCONC-002", REFERENCE, "lg_reference_writes_to_latest", "lossy"),
    ("ARIB-LGCONC-002", SQLITE_FILE, "lg_sqlite_writes_to_latest", "lossy"),
    ("ARIB-LGDUR-001", ASYNC_SQLITE_FILE, "lg_async_sqlite_never_commits", "acked_lost"),
    ("ARIB-LGDEL-001", ASYNC_SQLITE_FILE, "lg_async_sqlite_delete_keeps_writes",
     "tasks:deleted_came_back"),
    ("ARIB-LGDEL-001", SQLITE_FILE, "lg_sqlite_delete_keeps_writes", "threads:deleted_came_back"),
    ("ARIB-LGSETUP-001", SQLITE_FILE, "lg_sqlite_migration_not_idempotent", "setup_failed"),
    ("ARIB-LGCLOSE-001", ASYNC_SQLITE_FILE, "lg_async_sqlite_exit_leaves_a_scratch_store",
     "tasks:accepted_after_exit_then_lost"),
])
def test_a_real_lane_holds_and_its_mutant_is_violated(check_id: str, lane: TargetSpec,
                                                      mutant: str, mode: str) -> None:
    assert _run(check_id, lane).verdict is Verdict.HELD
    finding = _run(check_id, lane, mutant)
    assert finding.verdict is Verdict.VIOLATED and mode in finding.modes, (finding.modes,
                                                                           finding.samples)


@pytest.mark.parametrize(("check_id", "lane"), [
    ("ARIB-LGDUR-001", MEMORY),
    ("ARIB-LGCONC-002", ASYNC_SQLITE_MEMORY),
    ("ARIB-LGCANCEL-001", SQLITE_FILE),
    ("ARIB-LGSETUP-001", MEMORY),
    ("ARIB-LGCLOSE-001", MEMORY),
    ("ARIB-LGCLOSE-001", ASYNC_SQLITE_MEMORY),
])
def test_abstains_naming_what_it_found(check_id: str, lane: TargetSpec) -> None:
    finding = _run(check_id, lane)
    assert finding.verdict is Verdict.NOT_APPLICABLE
    assert lane.name in (finding.reason or "")


def test_a_cancelled_aput_is_seen_by_its_caller_only_on_async_sqlite_file() -> None:
    # The finding on the locked AsyncSqliteSaver: the INSERT of a cancelled aput runs in the
    # connection's open transaction; the caller reads it, a fresh instance does not.
    finding = _run("ARIB-LGCANCEL-001", ASYNC_SQLITE_FILE)
    assert finding.verdict is Verdict.VIOLATED
    assert "divergent_view" in finding.modes
    assert any("a fresh instance absent" in s for s in finding.samples)


@pytest.mark.slow
def test_a_crash_of_the_racing_process_is_a_violation_with_its_signal() -> None:
    # The finding on the locked SqliteSaver under CPython 3.12: from_conn_string's exit
    # closes the connection while another thread is inside it, and the process can die with
    # SIGSEGV (about one trial in three here). Its trials that do not crash hold.
    finding = run_small("ARIB-LGCLOSE-001", {"trials": 24, "writers": 3, "steps": 4}, None,
                        SQLITE_FILE)
    assert set(finding.modes) <= {"threads:crashed", "threads:refused_after_exit"}
    if finding.verdict is Verdict.VIOLATED:
        assert any("killed by SIG" in s for s in finding.samples), finding.samples


def test_cancellation_holds_where_no_second_instance_reads() -> None:
    assert _run("ARIB-LGCANCEL-001", ASYNC_SQLITE_MEMORY).verdict is Verdict.HELD


def test_every_check_names_existing_mutants_and_selectors() -> None:
    for check_id in SMALL:
        check = get_check(check_id)
        assert check.generated, check_id
        for name in check.mutants:
            assert get_mutant(name).description


# --- the judge ------------------------------------------------------------------------------

PUT = Op("put", "t", "c1", checkpoint={"channel_values": {"v": 1}})
WRITES = Op("writes", "t", "c1", task_id="k", writes=(("a", 1), ("b", 2)))


def test_the_judge_passes_an_exact_read_back() -> None:
    seen = {"t": {"c1": ({"v": 1}, {("k", "a", 1), ("k", "b", 2)})}}
    assert not judge([PUT, WRITES], {0, 1}, seen).bad


def test_the_judge_counts_lost_foreign_and_torn() -> None:
    lost = judge([PUT, WRITES], {0, 1}, {"t": {"c1": ({"v": 1}, {("k", "a", 1)})}})
    assert (lost.lost, lost.foreign, lost.torn) == (1, 0, 0)
    foreign = judge([PUT], {0}, {"t": {"c1": ({"v": 2}, {("x", "a", 1)})},
                                 "u": {"c9": ({}, set())}})
    assert (foreign.lost, foreign.foreign) == (0, 3), foreign.notes
    torn = judge([PUT, WRITES], {0}, {"t": {"c1": ({"v": 1}, {("k", "b", 2)})}})
    assert (torn.lost, torn.torn) == (0, 1)


def test_the_judge_lets_an_unacknowledged_op_be_wholly_absent() -> None:
    assert not judge([PUT, WRITES], {0}, {"t": {"c1": ({"v": 1}, set())}}).bad
    assert judge([PUT, WRITES], {0}, {"t": {}}).lost == 1


# --- the store draft (ARIB-LGSTORE-001, not admitted: no store lane yet) ----------------------


def _store_trial(tmp_path: Path, seed: int) -> Any:
    from langgraph.store.memory import InMemoryStore

    from checks.langgraph._store_race import DRAFT

    async def build(ctx: BuildContext) -> Handle:
        async def nothing() -> None:
            return None

        return Handle(session=InMemoryStore(), reopen=nothing, dispose=nothing)  # type: ignore[arg-type]

    lane = TargetSpec(name="test-store-memory", backend="InMemoryStore",
                      module="langgraph.store.memory", claims=Claims(has_close=False),
                      build=build, description="InMemoryStore built in this test")
    ctx = TrialContext(lane, BuildContext(tmp_path, "s"), 0, seed, DRAFT.resolve_params({}))
    return anyio.run(DRAFT.run_trial, ctx)


def test_the_store_draft_holds_on_in_memory_store(tmp_path: Path) -> None:
    trial = _store_trial(tmp_path, 5)
    assert not trial.violated, trial.sample


def test_the_store_draft_sees_a_search_that_reaches_other_namespaces(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from langgraph.store.memory import InMemoryStore

    original = InMemoryStore.asearch

    async def too_wide(self: Any, prefix: tuple[str, ...], **kwargs: Any) -> Any:
        return await original(self, prefix[:-1], **kwargs)

    monkeypatch.setattr(InMemoryStore, "asearch", too_wide)
    trial = _store_trial(tmp_path, 5)
    assert trial.violated and "gave an item of" in (trial.sample or "")


def test_the_store_draft_sees_a_delete_that_does_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from langgraph.store.memory import InMemoryStore

    async def ignored(self: Any, namespace: tuple[str, ...], key: str) -> None:
        return None

    monkeypatch.setattr(InMemoryStore, "adelete", ignored)
    trial = _store_trial(tmp_path, 5)
    assert trial.violated and "was deleted and is still there" in (trial.sample or "")
