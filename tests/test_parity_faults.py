"""The fault workflows: outcome classes, abstentions verified on the object, determinism."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path
from typing import Any

import anyio
import pytest

import arib.checks.openai_agents.parity.kind as agent_kind
from arib.checks.openai_agents.parity.fault_workflows import FAULT_WORKFLOWS, GATE_WORKFLOWS
from arib.checks.openai_agents.parity.workflows import REFERENCE_WORKFLOWS, step_pool
from arib.checks.parity.faultkit import (
    batch_state,
    builtin_class,
    interrupt,
    outcome,
    projection,
    spread,
)
from arib.ground.model import ExitCode, Loop
from arib.parity.gate import GateOptions, check
from arib.targets.base import Claims, Handle, TargetSpec
from arib.targets.openai_agents.reference import REFERENCE
from arib.targets.openai_agents.reference import _build as build_reference


def gate(tmp_path: Path, lanes: str, **kw: Any) -> dict[str, Any]:
    opts = GateOptions(
        lanes=lanes,
        loops=kw.pop("loops", (Loop.ASYNCIO,)),
        cases=0,
        workflows=kw.pop("workflows", FAULT_WORKFLOWS),
        results_dir=tmp_path / "results",
        **kw,
    )
    report, folder = check(opts)
    shutil.rmtree(folder)
    return report


def test_outcome_classes_name_the_builtin_class_a_caller_can_catch() -> None:
    from arib.targets.openai_agents.reference import SessionClosedError

    assert outcome(None) == "returned"
    assert outcome(SessionClosedError("closed")) == "raised:RuntimeError"
    assert outcome(asyncio.CancelledError()) == "cancelled"
    assert outcome(TimeoutError()) == "hung"
    assert builtin_class(KeyError("x")) == "KeyError"


def test_item_classes_and_projections() -> None:
    batch = [{"n": 1}, {"n": 2}]
    assert batch_state(batch, []) == "absent"
    assert batch_state(batch, [{"n": 0}, {"n": 2}, {"n": 1}]) == "present"
    assert batch_state(batch, [{"n": 1}]) == "partial"
    assert batch_state(batch, [{"n": 1}, {"n": 2}, {"n": 2}]) == "duplicated"
    assert projection([{"n": 1}, {"x": 0}, {"n": 2}], batch)
    assert not projection([{"n": 2}, {"n": 1}], batch)
    assert spread(0, 5) == [] and spread(3, 5) == [1, 2, 3]
    assert spread(20, 5) == [1, 6, 11, 15, 20]


def test_interrupt_cancels_or_acts_at_the_kth_suspension() -> None:
    steps: list[str] = []

    async def work() -> None:
        for i in range(3):
            steps.append(f"before {i}")
            await asyncio.sleep(0)

    async def main() -> None:
        counted = await interrupt(work, 0)
        assert (counted.suspensions, counted.outcome, counted.fired) == (3, "returned", False)
        steps.clear()
        cancelled = await interrupt(work, 2)
        assert cancelled.outcome == "cancelled" and cancelled.fired
        assert steps == ["before 0", "before 1"]
        acted: list[int] = []
        ran = await interrupt(work, 1, lambda: acted.append(1))
        assert ran.outcome == "returned" and acted == [1]

    anyio.run(main)


def test_fault_workflows_stay_out_of_the_generated_cases_pool() -> None:
    names = {w.name for w in GATE_WORKFLOWS}
    assert {w.name for w in FAULT_WORKFLOWS} <= names and set(REFERENCE_WORKFLOWS) <= set(
        GATE_WORKFLOWS
    )
    kinds = {s.kind for w in FAULT_WORKFLOWS for s in w.steps}
    assert not kinds & {s.kind for s in step_pool()}
    assert all(w.domain.startswith("fault:") for w in FAULT_WORKFLOWS)


def test_every_fault_workflow_agrees_across_loops_on_the_reference(tmp_path: Path) -> None:
    report = gate(tmp_path, "reference@uvloop")
    assert report["ok"], report["fail_reasons"]
    assert report["abstained_workflows"] == {}
    assert all(lane["workflows_ok"] == len(FAULT_WORKFLOWS) for lane in report["lanes"])


def test_an_in_memory_lane_abstains_with_the_reason_and_is_not_compared(tmp_path: Path) -> None:
    needs_store = [
        w.name
        for w in FAULT_WORKFLOWS
        if w.name
        in (
            "fault_close_races_write",
            "fault_writes_after_close",
            "fault_writer_killed",
            "fault_peer_sessions",
            "fault_instances_on_one_store",
        )
    ]
    workflows = tuple(w for w in FAULT_WORKFLOWS if w.name in needs_store)
    report = gate(tmp_path, "sqlite-memory", workflows=workflows)
    assert report["ok"], report["fail_reasons"]
    abstained = report["abstained_workflows"]["sqlite-memory@asyncio"]
    assert [a["workflow"] for a in abstained] == needs_store
    assert all("':memory:'" in a["reason"] for a in abstained), abstained
    (lane,) = [x for x in report["lanes"] if x["name"] == "sqlite-memory@asyncio"]
    assert lane["workflows_abstained"] == len(needs_store)


class _NoClose:
    """The reference session without close(): a runtime that never offered one."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> Any:
        if name == "close":
            raise AttributeError(name)
        return getattr(self._inner, name)


async def _build_without_close(ctx: Any) -> Handle:
    handle = await build_reference(ctx)
    return Handle(_NoClose(handle.session), handle.reopen, handle.dispose)


NO_CLOSE = TargetSpec(
    name="no-close",
    backend="ReferenceSession",
    module="arib.targets.openai_agents.reference",
    claims=Claims(has_close=False),
    build=_build_without_close,
    description="reference without close()",
)


def test_a_lane_without_close_abstains_from_the_close_workflows(tmp_path: Path) -> None:
    workflows = tuple(w for w in FAULT_WORKFLOWS if w.domain == "fault:close")
    report = gate(tmp_path, "no-close", workflows=workflows, extra_targets=(NO_CLOSE,))
    assert report["ok"], report["fail_reasons"]
    listed = report["abstained_workflows"]["no-close@asyncio"]
    reasons = {a["workflow"]: a["reason"] for a in listed}
    assert set(reasons) == {w.name for w in workflows}
    assert all("has no close(): the runtime never offered one" in r for r in reasons.values())


def test_a_reference_lane_that_abstains_is_a_failed_step(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    broken = TargetSpec(
        name="reference",
        backend="ReferenceSession",
        module="arib.targets.openai_agents.reference",
        claims=Claims(has_close=False),
        build=_build_without_close,
        description="a reference without close()",
        reference=True,
    )
    monkeypatch.setattr(agent_kind, "ALL_TARGETS", (broken, *agent_kind.ALL_TARGETS[1:]))
    workflows = tuple(w for w in FAULT_WORKFLOWS if w.name == "fault_concurrent_close")
    report = gate(tmp_path, "sqlite-memory", workflows=workflows)
    assert report["exit_code"] == ExitCode.ERROR_OR_NOTHING
    assert any(
        "the reference lane 'reference@asyncio' abstained from workflow 'fault_concurrent_close'"
        in r
        for r in report["fail_reasons"]
    )
    assert REFERENCE.claims.has_close  # the real reference offers every contract


def test_lanes_run_two_at_a_time_give_the_same_records_as_one_at_a_time(tmp_path: Path) -> None:
    # Each lane has its own process and temporary root (and, for a service lane, its own Redis
    # key prefix and PostgreSQL tables): running two at once must not change a single record.
    workflows = tuple(w for w in FAULT_WORKFLOWS if w.domain == "fault:concurrency")
    one = gate(tmp_path / "one", "sqlite-file,async-sqlite-file", workflows=workflows, workers=1)
    two = gate(tmp_path / "two", "sqlite-file,async-sqlite-file", workflows=workflows, workers=2)
    assert one["parameters"]["workers"] == 1 and two["parameters"]["workers"] == 2
    assert one["ok"] and two["ok"], (one["fail_reasons"], two["fail_reasons"])
    assert [lane["name"] for lane in one["lanes"]] == [lane["name"] for lane in two["lanes"]]


def test_fault_workflows_are_derived_from_the_checks_that_inject_the_faults() -> None:
    from arib.checks.openai_agents.parity.fault_workflows import (
        CLOSE_RACES_WRITE,
        fault_workflow_table,
    )
    from arib.checks.registry import load_checks

    table = dict(fault_workflow_table())
    assert [w.name for w in FAULT_WORKFLOWS] == [CLOSE_RACES_WRITE.name, *table]
    assert table == {
        "fault_cancelled_write": "ARIB-CANCEL-001", "fault_clear_races_writers": "ARIB-CLEAR-001",
        "fault_concurrent_appends": "ARIB-CONC-001", "fault_concurrent_close": "ARIB-CONC-002",
        "fault_writes_after_close": "ARIB-CONC-003", "fault_writer_killed": "ARIB-DUR-001",
        "fault_peer_sessions": "ARIB-ISO-001", "fault_limit_reads_race_appends": "ARIB-LIMIT-001",
        "fault_instances_on_one_store": "ARIB-MULTI-001",
        "fault_concurrent_batches": "ARIB-ORDER-001", "fault_concurrent_pops": "ARIB-POP-001",
        "fault_cancelled_first_call": "ARIB-RELEASE-001", "fault_failed_open": "ARIB-RELEASE-001",
        "fault_cancelled_close": "ARIB-RELEASE-001", "fault_redelivery": "ARIB-REPLAY-001",
        "fault_misconfigured_tables": "ARIB-TABLES-001",
    }
    by_check = {c.id: c for c in load_checks("arib.checks.openai_agents")}
    for workflow in FAULT_WORKFLOWS[1:]:
        (fault,) = [f for f in by_check[table[workflow.name]].parity if f.name == workflow.name]
        assert (workflow.domain, workflow.description) == (fault.domain, fault.description)
        assert [type(s) for s in workflow.steps] == [type(fault.build_step())]
