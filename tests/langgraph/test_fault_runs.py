"""The LangGraph fault checks of runs sharing one saver: ARIB-LGHANG-001 (every call returns),
ARIB-LGRUN-001 (a read held inside its call is a snapshot), ARIB-LGDEL-001's rows left behind;
and their parts: the snapshot judge, holding a call (arib.checks._suspend.held_at, HeldSerde), the
hang bound, the latest-only judge, reading a store besides the saver."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path

import pytest

from arib.checks._bounds import HANG_CAP_S, HANG_FLOOR_S, hang_bound
from arib.checks._suspend import held_at
from arib.checks.base import NotApplicable, TrialContext
from arib.checks.langgraph._faults import Op, judge, latest_of, writer_plan
from arib.checks.langgraph._held import HeldSerde
from arib.checks.langgraph._snapshot import look, verdict
from arib.checks.registry import get_check
from arib.ground.model import Verdict
from arib.mutants.registry import get_mutant
from arib.targets.base import BuildContext, TargetSpec
from arib.targets.langgraph.lanes import ASYNC_SQLITE_FILE, MEMORY, REFERENCE
from arib.targets.langgraph.leftovers import rows_naming
from tests.checkrun import run_small

HANG = {"trials": 4, "writers": 3, "steps": 2, "readers": 1}
RUN = {"trials": 1, "points": 3}
DEL = {"trials": 2, "steps": 2}


def test_every_call_returns_on_the_reference_both_ways() -> None:
    finding = run_small("ARIB-LGHANG-001", HANG, None, REFERENCE)
    assert finding.verdict is Verdict.HELD, (finding.samples, finding.reason)
    # the lane's way and from_conn_string, tasks and threads
    assert set(finding.modes) == {f"{opening}:{mode}:returned" for opening in
                                  ("lane", "from_conn_string") for mode in ("tasks", "threads")}


@pytest.mark.slow
def test_a_lock_order_inversion_is_hung_naming_the_calls_in_flight() -> None:
    finding = run_small("ARIB-LGHANG-001", HANG, "lg_reference_read_lock_inversion", REFERENCE)
    assert finding.verdict is Verdict.VIOLATED
    assert {m for m in finding.modes if m.endswith(":hung")} <= {
        "lane:threads:hung", "from_conn_string:threads:hung"}
    assert any(m.endswith(":hung") for m in finding.modes), finding.modes
    assert any("did not return within" in s and "in flight: " in s for s in finding.samples)


@pytest.mark.slow
def test_an_async_lock_order_inversion_is_hung() -> None:
    clean = run_small("ARIB-LGHANG-001", HANG, None, ASYNC_SQLITE_FILE)
    assert clean.verdict is Verdict.HELD, (clean.modes, clean.samples)
    finding = run_small("ARIB-LGHANG-001", HANG, "lg_async_sqlite_read_lock_inversion",
                        ASYNC_SQLITE_FILE)
    assert finding.verdict is Verdict.VIOLATED
    assert finding.violating_trials == finding.trials, finding.modes


def test_a_held_read_is_a_snapshot_on_the_reference() -> None:
    finding = run_small("ARIB-LGRUN-001", RUN, None, REFERENCE)
    assert finding.verdict is Verdict.HELD, (finding.samples, finding.reason)
    assert any("get:snapshot" in m and "list:snapshot" in m for m in finding.modes), \
        finding.modes


def test_reads_that_are_no_snapshot_are_torn() -> None:
    finding = run_small("ARIB-LGRUN-001", RUN, "lg_reference_reads_without_snapshot", REFERENCE)
    assert finding.verdict is Verdict.VIOLATED
    assert any(m.endswith(":torn") for m in finding.modes), finding.modes
    assert finding.replay and "--mutant" in finding.replay


@pytest.mark.slow
def test_a_listing_locked_per_item_is_torn_on_async_sqlite_file() -> None:
    clean = run_small("ARIB-LGRUN-001", RUN, None, ASYNC_SQLITE_FILE)
    assert clean.verdict is Verdict.HELD, (clean.modes, clean.samples)
    finding = run_small("ARIB-LGRUN-001", RUN, "lg_async_sqlite_list_writes_per_item",
                        ASYNC_SQLITE_FILE)
    assert finding.verdict is Verdict.VIOLATED and "list:torn" in finding.modes, finding.modes


def test_in_memory_saver_reads_are_torn_by_a_delete_from_another_thread() -> None:
    # The finding on the locked InMemorySaver: get_tuple and list take no lock, and load a
    # checkpoint's channel values after its row; a delete_thread from another thread landing
    # while the read deserializes leaves the read a checkpoint without its values.
    finding = run_small("ARIB-LGRUN-001", RUN, None, MEMORY)
    assert finding.verdict is Verdict.VIOLATED
    assert any(m.endswith(":torn") for m in finding.modes), finding.modes
    assert any("shows other values" in s for s in finding.samples), finding.samples


def test_a_soft_delete_is_left_behind() -> None:
    finding = run_small("ARIB-LGDEL-001", DEL, "lg_reference_delete_is_soft", REFERENCE)
    assert finding.verdict is Verdict.VIOLATED
    assert "tasks:left_behind" in finding.modes, finding.modes
    assert any("ref_tombstones still name the deleted thread" in s for s in finding.samples)


@pytest.mark.parametrize("check_id", ["ARIB-LGHANG-001", "ARIB-LGRUN-001"])
def test_the_new_checks_name_existing_mutants_and_selectors(check_id: str) -> None:
    check = get_check(check_id)
    assert check.generated and check.mutants and check.hang_invariant
    for name in check.mutants:
        assert get_mutant(name).description


# --- the snapshot judge ---------------------------------------------------------------------

PUTS = [Op("put", "t", f"c{n}", checkpoint={"channel_values": {"v": n}}) for n in range(2)]
PRE_WRITES = [Op("writes", "t", f"c{n}", task_id=f"k{n}", writes=(("a", n), ("b", n)))
              for n in range(2)]
PRE = [PUTS[0], PRE_WRITES[0], PUTS[1], PRE_WRITES[1]]
LATE = {"late_newest": Op("writes", "t", "c1", task_id="l1", writes=(("a", 9), ("b", 9))),
        "late_oldest": Op("writes", "t", "c0", task_id="l0", writes=(("a", 8), ("b", 8)))}
STAMPS = {"late_newest": (2, 3), "late_oldest": (4, 5), "delete": (6, 7)}
READ = (1, 8)


def _shown(*cps: str, late: tuple[str, ...] = (), drop: tuple[str, ...] = ()) -> dict:
    out = {}
    for cp in cps:
        n = int(cp[1])
        writes = set() if cp in drop else set(PRE_WRITES[n].triples())
        for name in late:
            if LATE[name].checkpoint_id == cp:
                writes |= LATE[name].triples()
        out[cp] = ({"v": n}, writes)
    return out


def _mode(shown: dict, delete: bool = True) -> str:
    return verdict(look(shown, PRE, LATE, delete, ["c0", "c1"]), STAMPS, READ)[0]


def test_a_read_before_every_late_call_is_a_snapshot() -> None:
    assert _mode(_shown("c0", "c1")) == "snapshot"


def test_a_read_after_every_call_is_a_snapshot() -> None:
    assert _mode({}) == "snapshot"
    assert _mode(_shown("c0", "c1", late=("late_newest", "late_oldest")), False) == "snapshot"


def test_a_later_call_shown_and_an_earlier_one_not_is_no_snapshot() -> None:
    mode, why = verdict(look(_shown("c0", "c1", late=("late_oldest",)), PRE, LATE, True,
                             ["c0", "c1"]), STAMPS, READ)
    assert mode == "not_a_snapshot" and "late_oldest" in why and "late_newest" in why


def test_a_checkpoint_without_its_writes_or_half_a_thread_is_torn() -> None:
    assert _mode(_shown("c0", "c1", drop=("c0",))) == "torn"
    assert _mode(_shown("c1")) == "torn"
    half = _shown("c0", "c1")
    half["c1"] = (half["c1"][0], {("k1", "a", 1)})
    assert _mode(half) == "torn"


def test_a_missing_checkpoint_without_a_delete_is_lost_and_a_stranger_foreign() -> None:
    assert _mode(_shown("c1"), delete=False) == "lost"
    stranger = _shown("c0", "c1")
    stranger["c7"] = ({}, set())
    assert _mode(stranger) == "foreign"


# --- holding a call -------------------------------------------------------------------------

def test_a_call_held_at_its_kth_suspension_lets_others_run_then_goes_on() -> None:
    order: list[str] = []

    async def steps() -> str:
        for n in range(1, 4):
            await asyncio.sleep(0)
            order.append(f"step {n}")
        return "end"

    async def main() -> tuple[str, list[int]]:
        release = asyncio.Event()
        seen = [0]

        async def hold() -> None:
            order.append("held")
            await release.wait()

        task = asyncio.ensure_future(held_at(steps(), 2, hold, seen))
        for _ in range(5):
            await asyncio.sleep(0)
        order.append("other")
        release.set()
        return await task, seen

    result, seen = asyncio.run(main())
    assert result == "end" and seen == [3]
    assert order == ["step 1", "held", "other", "step 2", "step 3"]


class _Serde:
    def dumps_typed(self, obj: object) -> tuple[str, object]:
        return ("t", obj)

    def loads_typed(self, data: tuple[str, object]) -> object:
        return data[1]


def test_held_serde_holds_the_armed_threads_kth_load_only() -> None:
    gate = HeldSerde(_Serde(), timeout_s=5)
    got: list[object] = []

    def reader() -> None:
        gate.arm(2)
        loaded = [gate.loads_typed(("t", n)) for n in range(3)]
        gate.disarm()
        got.extend(loaded)

    thread = threading.Thread(target=reader)
    thread.start()
    assert gate.reached.wait(5)
    assert gate.loads_typed(("t", "other")) == "other"  # another thread passes
    assert got == [] and thread.is_alive()
    gate.release.set()
    thread.join(5)
    assert got == [0, 1, 2] and gate.count == 3


def _ctx(deadline: float | None) -> TrialContext:
    return TrialContext(REFERENCE, BuildContext(Path("/nonexistent"), "s"), 0, 1, {},
                        deadline=deadline)


def test_the_hang_bound_stays_inside_the_runs_limit() -> None:
    assert hang_bound(_ctx(None)) == HANG_CAP_S
    assert hang_bound(_ctx(time.monotonic() + 60)) == HANG_CAP_S
    assert 1.4 < hang_bound(_ctx(time.monotonic() + 3)) <= 1.5
    assert hang_bound(_ctx(time.monotonic())) == HANG_FLOOR_S


# --- the latest-only judge, the store read besides the saver ---------------------------------

def test_a_latest_only_saver_is_judged_on_each_threads_latest() -> None:
    old = Op("put", "t", "c1", checkpoint={"channel_values": {"v": 1}})
    new = Op("put", "t", "c2", checkpoint={"channel_values": {"v": 2}})
    writes = Op("writes", "t", "c2", task_id="k", writes=(("a", 1),))
    plan = [old, new, writes]
    assert latest_of(plan, {0, 1, 2}) == ([new, writes], {0, 1})
    assert not judge(plan, {0, 1, 2}, {"t": {"c2": ({"v": 2}, {("k", "a", 1)})}},
                     latest_only=True).bad
    assert judge(plan, {0, 1, 2}, {"t": {"c1": ({"v": 1}, set())}}, latest_only=True).bad


def test_rows_naming_a_thread_are_read_besides_the_saver(tmp_path: Path) -> None:
    async def main() -> tuple[dict, dict]:
        build = BuildContext(tmp_path, "s")
        handle = await REFERENCE.build(build)
        for op in writer_plan(handle.session, 1, 0, "thread-V", 2, listed=True):
            await op.run(handle.session)
        before = dict(rows_naming(REFERENCE, build, "thread-V"))
        await handle.session.adelete_thread("thread-V")
        after = dict(rows_naming(REFERENCE, build, "thread-V"))
        await handle.dispose()
        return before, after

    before, after = asyncio.run(main())
    assert before == {"reference.db:ref_checkpoints": 2, "reference.db:ref_writes": 4}
    assert after == {}


def test_a_store_in_memory_cannot_be_read_besides_the_saver(tmp_path: Path) -> None:
    lane: TargetSpec = MEMORY
    with pytest.raises(NotApplicable, match="lg-memory"):
        rows_naming(lane, BuildContext(tmp_path, "s"), "x")


# --- time travel while the thread is written (ARIB-LGFORK-001) -------------------------------

FORK = {"trials": 2, "steps": 2}


def test_a_fork_beside_the_main_run_leaves_both_lines_whole() -> None:
    finding = run_small("ARIB-LGFORK-001", FORK, None, REFERENCE)
    assert finding.verdict is Verdict.HELD, (finding.samples, finding.reason)
    assert set(finding.modes) == {"tasks:both_lines", "threads:both_lines"}


@pytest.mark.parametrize(("mutant", "mode", "sample"), [
    ("lg_reference_parent_is_latest", "tasks:wrong_parent", "is listed under parent"),
    ("lg_reference_special_writes_kept_first", "tasks:lossy",
     "still shows the resume its second resume overwrote"),
])
def test_a_fork_misfiled_or_a_stale_resume_is_seen(mutant: str, mode: str, sample: str) -> None:
    finding = run_small("ARIB-LGFORK-001", FORK, mutant, REFERENCE)
    assert finding.verdict is Verdict.VIOLATED and mode in finding.modes, finding.modes
    assert any(sample in s for s in finding.samples), finding.samples

