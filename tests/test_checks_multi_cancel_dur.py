"""ARIB-MULTI-001, ARIB-CANCEL-001, ARIB-DUR-001: hold on the reference, kill a hand-written
mutant each, reap every forked worker, and judge hand-made outcomes correctly."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from arib.checks import _forked
from arib.checks.openai_agents.cancel_001 import _cancelled_call
from arib.checks.openai_agents.dur_001 import _judge, process_local_store
from arib.checks.registry import get_check
from arib.ground.model import Finding, Verdict
from arib.mutants.registry import get_mutant
from arib.targets.base import BuildContext, Handle, TargetSpec
from arib.targets.openai_agents.reference import REFERENCE
from arib.targets.openai_agents.sdk import SQLITE_FILE
from tests.checkrun import assert_holds_with_its_trials, assert_mutant_violates, run_small

SMALL: dict[str, dict[str, int]] = {
    "ARIB-MULTI-001": {"trials": 2, "instances": 2, "processes": 1, "appends": 5},
    "ARIB-CANCEL-001": {"trials": 1, "points": 6},
    "ARIB-DUR-001": {"trials": 2, "appends": 12},
}


def _run(check_id: str, mutant: str | None = None, lane: TargetSpec = REFERENCE) -> Finding:
    return run_small(check_id, SMALL[check_id], mutant, lane)


@pytest.mark.parametrize("check_id", sorted(SMALL))
def test_holds_on_the_reference(check_id: str) -> None:
    assert_holds_with_its_trials(check_id, SMALL[check_id])


@pytest.mark.parametrize(("check_id", "mutant", "mode"), [
    ("ARIB-MULTI-001", "reference_instance_local_sequence", "lossy"),
    ("ARIB-MULTI-001", "reference_txn_across_await_no_wait", "lock_error_escaped"),
    ("ARIB-CANCEL-001", "reference_cancel_partial_batch", "partial"),
    ("ARIB-CANCEL-001", "reference_cancel_replays_parked_write", "absent_then_duplicated"),
    ("ARIB-DUR-001", "reference_commit_on_close", "acked_lost"),
])
def test_hand_written_mutant_is_violated(check_id: str, mutant: str, mode: str) -> None:
    assert_mutant_violates(check_id, SMALL[check_id], mutant, mode)


def test_a_torn_tail_is_seen_whichever_append_the_kill_lands_after() -> None:
    # The half-written items are the newest: the acknowledged append when the kill lands right
    # after its ack (acked_lost: its whole items are missing), else the one in flight (its
    # half-written items are foreign). Which one depends on where the kill lands.
    finding = _run("ARIB-DUR-001", "reference_torn_tail")
    assert finding.verdict is Verdict.VIOLATED
    assert finding.violating_trials == finding.trials
    assert set(finding.modes) <= {"acked_lost", "torn_or_foreign"}, finding.modes


def test_a_real_backend_holds_and_its_mutant_is_violated() -> None:
    assert _run("ARIB-DUR-001", lane=SQLITE_FILE).verdict is Verdict.HELD
    finding = _run("ARIB-DUR-001", "sqlite_write_behind_buffer", lane=SQLITE_FILE)
    assert finding.verdict is Verdict.VIOLATED and "acked_lost" in finding.modes


def test_every_new_check_names_existing_mutants_and_selectors() -> None:
    for check_id in SMALL:
        check = get_check(check_id)
        assert check.generated, check_id
        assert {p.name for p in check.params} >= {"trials"}
        for name in check.mutants:
            assert get_mutant(name).description


# --- forked workers -------------------------------------------------------------------------


def _children() -> set[int]:
    """Pids of this process's children, from /proc."""
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == os.getpid():
                found.add(int(entry.name))
    return found


def test_a_hanging_worker_is_killed_and_reaped() -> None:
    async def hang(channel: _forked.Channel) -> None:
        channel.send({"ready": True})
        await anyio.sleep(3600)

    async def main() -> tuple[dict[str, Any] | None, dict[str, Any] | None, str]:
        worker = _forked.fork_worker("w", hang)
        try:
            first = await _forked.next_message(worker, time.monotonic() + 10)
            second = await _forked.next_message(worker, time.monotonic() + 0.2)
        finally:
            _forked.reap([worker])
        return first, second, worker.describe_exit()

    before = _children()
    first, second, exit_text = anyio.run(main)
    assert first == {"ready": True} and second is None
    assert exit_text == f"killed by {signal.SIGKILL.name}"
    assert _children() <= before


def test_workers_start_together_and_report() -> None:
    async def body(channel: _forked.Channel) -> None:
        started = await channel.wait_go(10)
        channel.send({"started": started, "at": time.monotonic()})

    async def main() -> list[dict[str, Any] | None]:
        workers = [_forked.fork_worker(f"w{i}", body) for i in range(2)]
        try:
            start = time.monotonic() + 0.1
            _forked.send_go(workers, start)
            got = [await _forked.next_message(w, time.monotonic() + 10) for w in workers]
            for w in workers:
                assert await _forked.join(w, time.monotonic() + 10)
        finally:
            _forked.reap(workers)
        assert all(m and m["at"] >= start for m in got)
        return got

    got = anyio.run(main)
    assert all(m and m["started"] for m in got)


# --- ARIB-CANCEL-001: the cancellation point ------------------------------------------------


class _Steps:
    """A fake session whose add_items yields ``steps`` times, writing one item per step."""

    def __init__(self, steps: int) -> None:
        self.steps = steps
        self.written: list[Any] = []

    async def add_items(self, items: list[Any]) -> None:
        for item in items[: self.steps]:
            await asyncio.sleep(0)
            self.written.append(item)


def test_cancellation_lands_at_the_chosen_suspension() -> None:
    async def main() -> list[tuple[str, int, bool]]:
        out = []
        for k in range(0, 5):
            fake = _Steps(3)
            outcome = await _cancelled_call(fake, ["a", "b", "c"], k)
            out.append((outcome.kind, len(fake.written), outcome.cancel_sent))
        return out

    assert anyio.run(main) == [
        ("returned", 3, False),
        ("cancelled", 0, True),
        ("cancelled", 1, True),
        ("cancelled", 2, True),
        ("returned", 3, False),
    ]


# --- ARIB-DUR-001: judging and abstaining ---------------------------------------------------


class _Ctx:
    index, seed, ops = 0, 1, ["op"]


def _items(n: int, size: int = 1) -> list[list[dict[str, str]]]:
    return [[{"role": "user", "content": f"{b}.{i}"} for i in range(size)] for b in range(n)]


def test_dur_judge_accepts_an_absent_in_flight_append() -> None:
    plan = _items(4, 2)
    trial = _judge(_Ctx(), plan, [0, 1], 2, [*plan[0], *plan[1]], [])  # type: ignore[arg-type]
    assert not trial.violated and trial.mode == "durable"


def test_dur_judge_flags_a_half_written_in_flight_batch_and_a_lost_ack() -> None:
    plan = _items(4, 2)
    torn = _judge(_Ctx(), plan, [0, 1], 2, [*plan[0], *plan[1], plan[2][0]], [])  # type: ignore[arg-type]
    assert torn.violated and torn.mode == "torn_or_foreign" and torn.counts.foreign == 1
    lost = _judge(_Ctx(), plan, [0, 1], 2, [*plan[0]], [])  # type: ignore[arg-type]
    assert lost.violated and lost.mode == "acked_lost" and lost.counts.lost == 2


def test_dur_abstains_for_a_process_local_store(tmp_path: Path) -> None:
    async def build(ctx: BuildContext) -> Handle:
        from agents.memory import SQLiteSession

        session = SQLiteSession(ctx.session_id)  # ':memory:'

        async def reopen() -> Handle:
            return await build(ctx)

        async def dispose() -> None:
            session.close()

        return Handle(session, reopen, dispose)

    memory = TargetSpec(name="sqlite-memory", backend="SQLiteSession",
                        module="agents.memory.sqlite_session", claims=SQLITE_FILE.claims,
                        build=build, description="SQLiteSession(':memory:')")
    finding = _run("ARIB-DUR-001", lane=memory)
    assert finding.verdict is Verdict.NOT_APPLICABLE
    assert "does not apply" in (finding.reason or "")
    assert "':memory:'" in (finding.reason or "")


def test_process_local_store_is_read_from_the_object(tmp_path: Path) -> None:
    from agents.memory import SQLiteSession

    assert process_local_store(SQLiteSession("s")) is not None
    on_disk = SQLiteSession("s", db_path=str(tmp_path / "x.db"))
    try:
        assert process_local_store(on_disk) is None
    finally:
        on_disk.close()
