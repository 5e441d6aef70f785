"""The LangGraph contract checks ARIB-CKPT-002..007: each holds on our reference, is violated
by its hand-written mutants (on the reference and on a real saver lane) with a replay, is
deterministic from its seed, and abstains where a saver offers no delete_thread."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from arib.ground.model import Verdict
from arib.targets.langgraph.lanes import LANES, REFERENCE
from tests.checkrun import forced_broken_finding, run_small

SMALL: dict[str, dict[str, int]] = {
    "ARIB-CKPT-002": {"trials": 1, "steps": 4},
    "ARIB-CKPT-003": {"trials": 1, "steps": 3},
    "ARIB-CKPT-004": {"trials": 1, "writes": 2},
    "ARIB-CKPT-005": {"trials": 1, "tasks": 3},
    "ARIB-CKPT-006": {"trials": 1, "steps": 2},
    "ARIB-CKPT-007": {"trials": 1, "steps": 1},
}
LANE = {lane.name: lane for lane in LANES}
ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("check_id", sorted(SMALL))
def test_holds_on_the_reference(check_id: str) -> None:
    finding = run_small(check_id, SMALL[check_id], lane=REFERENCE)
    assert finding.verdict is Verdict.HELD, (finding.samples, finding.reason)
    assert finding.trials == 1 and finding.violating_trials == 0


@pytest.mark.parametrize(("check_id", "mutant", "mode", "needle"), [
    ("ARIB-CKPT-002", "lg_reference_list_ignores_before", "wrong", "list before"),
    ("ARIB-CKPT-003", "lg_reference_parent_is_latest", "wrong", "parent_config of"),
    ("ARIB-CKPT-004", "lg_reference_special_writes_kept_first", "wrong",
     "expected 'special-2', got 'special-1'"),
    ("ARIB-CKPT-005", "lg_reference_writes_by_task_descending", "wrong", "order of the writes"),
    ("ARIB-CKPT-006", "lg_reference_ns_prefix_matches", "foreign", "gave metadata of scope"),
    ("ARIB-CKPT-007", "lg_reference_delete_keeps_namespaces", "foreign", "still found"),
])
def test_hand_written_reference_mutant_is_violated(check_id: str, mutant: str, mode: str,
                                                   needle: str) -> None:
    finding = run_small(check_id, SMALL[check_id], mutant, lane=REFERENCE)
    assert finding.verdict is Verdict.VIOLATED, (finding.samples, finding.reason)
    assert finding.violating_trials == finding.trials == 1
    assert mode in finding.modes, finding.modes
    assert any(needle in sample for sample in finding.samples), finding.samples
    assert finding.ops and finding.replay and f"--mutant {mutant}" in finding.replay


@pytest.mark.parametrize("check_id", sorted(SMALL))
def test_the_forced_broken_reference_is_violated_with_its_evidence(check_id: str) -> None:
    finding = forced_broken_finding(check_id, SMALL[check_id], REFERENCE)
    assert finding.verdict is Verdict.VIOLATED and "raised" in finding.modes, finding.modes
    assert any("forced-broken mutant" in sample for sample in finding.samples)


@pytest.mark.parametrize(("check_id", "lane", "mutant", "mode"), [
    ("ARIB-CKPT-002", "lg-sqlite-file", "lg_contract_sqlite_limit_one_more", "wrong"),
    ("ARIB-CKPT-003", "lg-async-sqlite-file", "lg_contract_async_sqlite_parent_dropped",
     "wrong"),
    ("ARIB-CKPT-004", "lg-sqlite-file", "lg_contract_sqlite_special_kept_first", "wrong"),
    ("ARIB-CKPT-005", "lg-async-sqlite-file", "lg_contract_async_sqlite_writes_to_latest",
     "lost"),
    ("ARIB-CKPT-006", "lg-memory", "lg_contract_memory_ns_prefix_matches", "foreign"),
    ("ARIB-CKPT-007", "lg-sqlite-file", "lg_contract_sqlite_delete_prefix_threads", "lost"),
])
def test_hand_written_saver_mutant_is_violated_where_the_clean_saver_holds(
        check_id: str, lane: str, mutant: str, mode: str) -> None:
    clean = run_small(check_id, SMALL[check_id], lane=LANE[lane])
    assert clean.verdict is Verdict.HELD, clean.samples
    finding = run_small(check_id, SMALL[check_id], mutant, lane=LANE[lane])
    assert finding.verdict is Verdict.VIOLATED and mode in finding.modes, finding.modes
    assert finding.ops and finding.replay and "--mutant" in finding.replay


def test_the_same_seed_gives_the_same_operations() -> None:
    first = run_small("ARIB-CKPT-006", SMALL["ARIB-CKPT-006"], lane=REFERENCE)
    again = run_small("ARIB-CKPT-006", SMALL["ARIB-CKPT-006"], lane=REFERENCE)
    assert first.seeds == again.seeds
    violated = run_small("ARIB-CKPT-006", SMALL["ARIB-CKPT-006"],
                         "lg_reference_ns_prefix_matches", lane=REFERENCE)
    replay = run_small("ARIB-CKPT-006", SMALL["ARIB-CKPT-006"],
                       "lg_reference_ns_prefix_matches", lane=REFERENCE)
    assert violated.ops and violated.ops == replay.ops
    assert violated.samples == replay.samples


def test_delete_thread_abstains_where_the_saver_does_not_implement_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from arib.targets.langgraph.reference import ReferenceSaver

    def not_implemented(self: object, thread_id: str) -> None:
        raise NotImplementedError("delete_thread of an older release")

    # The check runs in a forked child, which inherits the patched class.
    monkeypatch.setattr(ReferenceSaver, "delete_thread", not_implemented)
    finding = run_small("ARIB-CKPT-007", SMALL["ARIB-CKPT-007"], lane=REFERENCE)
    assert finding.verdict is Verdict.NOT_APPLICABLE, (finding.verdict, finding.samples)
    assert "NotImplementedError" in (finding.reason or "")
    # the race of delete_thread too: a delete refused on every call is none to race (DuckDB's
    # and LMDB's savers inherit the base class's)
    raced = run_small("ARIB-LGDEL-001", {"trials": 2, "steps": 2}, lane=REFERENCE)
    assert raced.verdict is Verdict.NOT_APPLICABLE, (raced.verdict, raced.samples)
    assert "NotImplementedError" in (raced.reason or "")


def _import_error(code: str, filename: str) -> ImportError:
    try:
        exec(compile(code, filename, "exec"), {})
    except ImportError as exc:
        return exc
    raise AssertionError(f"{code!r} imported")


def test_an_api_the_release_lacks_makes_a_check_abstain_not_fail() -> None:
    import anyio

    from arib.checks.base import NotApplicable, TrialContext
    from arib.checks.langgraph._contract import guarded, release_lacks
    from arib.targets.base import BuildContext

    ours = str(ROOT / "checks" / "langgraph" / "ckpt_x.py")
    lacking = _import_error("from langgraph.no_such_api import Op", ours)
    assert release_lacks(lacking)
    # the release's own import, or another package's, is no abstention: it is evidence
    assert not release_lacks(_import_error("from langgraph.no_such_api import Op", "/x/y.py"))
    assert not release_lacks(_import_error("from no_such_package import x", ours))

    ctx = TrialContext(REFERENCE, BuildContext(ROOT, "s"), 0, 7, {})

    async def body() -> Any:
        raise lacking

    with pytest.raises(NotApplicable, match="the installed release has no "
                                            "langgraph.no_such_api API this check uses"):
        anyio.run(guarded, ctx, body)
