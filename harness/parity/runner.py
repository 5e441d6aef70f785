"""Runs one parity lane in a forked child: every workflow and generated case, fresh sessions.

Each workflow gets a fresh temporary root under the lane's own temporary root and a fresh
session built by the lane's target. A workflow that raises ends with ok=False (the exception is
evidence, kept in its reads); a target that cannot be built, a false claim, a crash or a hang of
the child ends the lane with ``LaneStatus.ERROR``. Only that lane is lost: the parent goes on.
"""

from __future__ import annotations

import datetime as _dt
import enum
import functools
import tempfile
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import anyio

from arib.checks.parity.faultkit import StoreAccess
from arib.checks.parity.kind import Play
from arib.checks.parity.records import Read, Workflow, WorkflowResult, digest, display
from arib.ground.child import ChildStatus, run_jobs
from arib.ground.family import apply_environment
from arib.mutants.base import MutantSpec
from arib.mutants.parity import applies_to
from arib.parity.lanes import LaneSpec
from arib.parity.options import LANE_TIMEOUT_S
from arib.targets.base import BuildContext, verify_claims

LANE_KIND = "arib/agent-session-parity-lane-v1"
WORKFLOW_TIMEOUT_S = 60.0


class LaneStatus(str, enum.Enum):
    """How a lane's run ended, before it is compared with anything.

    Not a ``Verdict``: a lane's verdict (``arib.parity.report.lane_verdict``) comes from its
    comparison with the reference lane, which this status precedes. FAILED (a workflow raised)
    is an ``error`` on the reference lane but ``violated`` on any other; an OK lane is
    ``violated`` when it diverges. The status is what the lane's own report
    (``lanes/<lane>.json``, reused by ``--reuse``) records about the lane alone.
    """

    OK = "ok"  # every workflow and case ran to its end
    FAILED = "failed"  # at least one workflow or case raised (the lane still finished)
    ERROR = "error"  # the backend could not be built, a claim was false, or the child died


def now_iso() -> str:
    """The current UTC time in ISO 8601, to the second."""
    return _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat()


def definitions_digest(workflows: Sequence[Workflow], cases: Sequence[Workflow]) -> str:
    """A digest of what a lane runs (the step lists), part of a retained report's binding."""
    return digest([[w.name, w.domain, [repr(s) for s in w.steps]] for w in (*workflows, *cases)])


@dataclass(frozen=True)
class LaneReport:
    """What one lane returned: a status, its binding, and a result per workflow and case."""

    lane: str
    target: str
    loop: str
    status: LaneStatus
    binding: Mapping[str, Any]
    workflows: tuple[WorkflowResult, ...] = ()
    cases: tuple[WorkflowResult, ...] = ()
    elapsed_ms: float = 0.0
    started: str = ""
    error: str | None = None
    reused: bool = False
    # CPU time of the lane's process (all its threads): what the lane costs, whatever else
    # the machine is doing (wall time on a shared machine is mostly the others' load).
    cpu_ms: float | None = None
    mutant: str | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def ok(self) -> bool:
        """Whether the lane's status is OK."""
        return self.status is LaneStatus.OK

    def results(self) -> tuple[WorkflowResult, ...]:
        """The lane's workflow results, then its case results."""
        return self.workflows + self.cases

    def as_reused(self) -> LaneReport:
        """This report marked as reused."""
        return replace(self, reused=True)

    def to_json(self) -> dict[str, Any]:
        """The JSON form of this lane report."""
        return {
            "kind": LANE_KIND,
            "lane": self.lane,
            "target": self.target,
            "loop": self.loop,
            "status": self.status.value,
            "ok": self.ok,
            "binding": dict(self.binding),
            "elapsed_ms": round(self.elapsed_ms, 3),
            "cpu_ms": None if self.cpu_ms is None else round(self.cpu_ms, 3),
            "started": self.started,
            "error": self.error,
            "reused": self.reused,
            "mutant": self.mutant,
            "notes": list(self.notes),
            "workflows": [w.to_json() for w in self.workflows],
            "cases": [c.to_json() for c in self.cases],
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> LaneReport:
        """The lane report from its JSON form."""
        return cls(
            lane=data["lane"],
            target=data["target"],
            loop=data["loop"],
            status=LaneStatus(data["status"]),
            binding=dict(data["binding"]),
            workflows=tuple(WorkflowResult.from_json(w) for w in data.get("workflows", [])),
            cases=tuple(WorkflowResult.from_json(c) for c in data.get("cases", [])),
            elapsed_ms=float(data.get("elapsed_ms", 0.0)),
            cpu_ms=data.get("cpu_ms"),
            started=str(data.get("started", "")),
            error=data.get("error"),
            reused=bool(data.get("reused", False)),
            mutant=data.get("mutant"),
            notes=tuple(data.get("notes", ())),
        )


def _shrink(result: WorkflowResult) -> WorkflowResult:
    """The result with its reads in display form (long strings shortened) for the pipe."""
    if result.reads is None:
        return result
    return replace(result, reads=tuple(Read(r.label, display(r.items)) for r in result.reads))


def _failed(workflow: Workflow, lane: str, error: str, case_seed: int | None) -> WorkflowResult:
    return WorkflowResult(
        name=workflow.name,
        domain=workflow.domain,
        ok=False,
        replay_hash=digest([["error", error]]),
        replay_hash_normalized=None,
        read_labels=(),
        read_hashes=(),
        error=error,
        reads=(),
        case_seed=case_seed,
    )


class _LaneBroken(Exception):
    """The lane's backend cannot be built or lies about itself: the lane ends in error."""


async def _run_one_workflow(
    lane: LaneSpec,
    workflow: Workflow,
    root: Path,
    services: Mapping[str, str],
    case_seed: int | None,
    check_claims: bool,
    play: Play,
) -> WorkflowResult:
    root.mkdir(parents=True, exist_ok=False)
    ctx = BuildContext(root=root, session_id=f"parity-{workflow.name}", services=dict(services))
    try:
        handle = await lane.target.build(ctx)
    except Exception as exc:  # noqa: BLE001 - reported as the lane's error
        raise _LaneBroken(
            f"backend of lane {lane.name!r} could not be built: {type(exc).__name__}: {exc}\n"
            f"{traceback.format_exc(limit=6)}"
        ) from exc
    store = StoreAccess(lane.target, handle, root, ctx.session_id, services)
    try:
        if check_claims:
            claim_error = verify_claims(lane.target, handle.session)
            if claim_error:
                raise _LaneBroken(claim_error)
        try:
            with anyio.fail_after(WORKFLOW_TIMEOUT_S):
                result = await play(
                    workflow, handle.session, lane=lane.name, case_seed=case_seed, store=store
                )
        except TimeoutError:
            result = _failed(
                workflow,
                lane.name,
                f"workflow {workflow.name!r} timed out after {WORKFLOW_TIMEOUT_S:.0f} s on "
                f"lane {lane.name!r}",
                case_seed,
            )
    finally:
        await store.dispose()
        await handle.dispose()
    return _shrink(result)


async def run_lane_async(
    lane: LaneSpec,
    workflows: Sequence[Workflow],
    cases: Sequence[tuple[int, Workflow]],
    services: Mapping[str, str],
    binding: Mapping[str, Any],
    mutant: str | None = None,
    tmpdir: str | None = None,
    *,
    play: Play,
) -> LaneReport:
    """Run every workflow and case of one lane in this process, on the running event loop
    (``play``, the family's ``WorkflowKind.play``, plays one workflow).

    The stores live under ``tmpdir`` (the gate passes tmpfs where there is one: what it
    compares is what the session returns, never durability, and SQLite's fsync on a shared
    disk would otherwise be most of a file lane's time).
    """
    started_at = now_iso()
    started = time.perf_counter()
    done: list[WorkflowResult] = []
    done_cases: list[WorkflowResult] = []
    with tempfile.TemporaryDirectory(prefix=f"arib-parity-{lane.target.name}-", dir=tmpdir) as tmp:
        root = Path(tmp)
        try:
            for index, workflow in enumerate(workflows):
                done.append(
                    await _run_one_workflow(
                        lane, workflow, root / f"w{index:03d}", services, None, index == 0, play
                    )
                )
            for index, (seed, workflow) in enumerate(cases):
                done_cases.append(
                    await _run_one_workflow(
                        lane, workflow, root / f"c{index:03d}", services, seed, False, play
                    )
                )
        except _LaneBroken as exc:
            return LaneReport(
                lane=lane.name,
                target=lane.target.name,
                loop=lane.loop.value,
                status=LaneStatus.ERROR,
                binding=binding,
                workflows=tuple(done),
                cases=tuple(done_cases),
                elapsed_ms=(time.perf_counter() - started) * 1000.0,
                started=started_at,
                error=str(exc),
                mutant=mutant,
            )
    failed = any(not r.ok for r in (*done, *done_cases))
    return LaneReport(
        lane=lane.name,
        target=lane.target.name,
        loop=lane.loop.value,
        status=LaneStatus.FAILED if failed else LaneStatus.OK,
        binding=binding,
        workflows=tuple(done),
        cases=tuple(done_cases),
        elapsed_ms=(time.perf_counter() - started) * 1000.0,
        started=started_at,
        mutant=mutant,
    )


def _lane_job(
    lane: LaneSpec,
    workflows: Sequence[Workflow],
    cases: Sequence[tuple[int, Workflow]],
    services: Mapping[str, str],
    binding: Mapping[str, Any],
    applied: MutantSpec | None,
    tmpdir: str | None,
    play: Play,
) -> Callable[[], LaneReport]:
    def job() -> LaneReport:
        cpu = time.process_time()
        apply_environment()  # every family's switches (the SDKs' tracing off)
        if applied is not None:
            applied.apply()
        report = anyio.run(
            functools.partial(run_lane_async, play=play),
            lane,
            workflows,
            cases,
            services,
            binding,
            applied.name if applied else None,
            tmpdir,
            backend="asyncio",
            backend_options=lane.loop.backend_options(),
        )
        return replace(report, cpu_ms=(time.process_time() - cpu) * 1000.0)

    return job


def run_lanes(
    lanes: Sequence[tuple[LaneSpec, Mapping[str, Any]]],
    workflows: Sequence[Workflow],
    cases: Sequence[tuple[int, Workflow]],
    *,
    services: Mapping[str, str],
    mutant: MutantSpec | None = None,
    timeout_s: float = LANE_TIMEOUT_S,
    tmpdir: str | None = None,
    workers: int = 1,
    play: Play,
) -> list[LaneReport]:
    """Run each (lane, binding) in its own forked child, ``workers`` at a time; the reports
    come back in the order given. A crash or hang of a child becomes an ERROR lane report.

    ``play`` (the family's ``WorkflowKind.play``) plays one workflow in a lane's child.

    Lanes share nothing but the servers: each has its own process and temporary root, and the
    service targets derive their Redis key prefix and PostgreSQL tables from that root.
    """
    applied = [
        mutant if mutant is not None and applies_to(mutant, lane.target.name, lane.loop.value)
        else None
        for lane, _ in lanes
    ]
    jobs = [
        _lane_job(
            lane, workflows, cases, services, binding, mutant_, tmpdir, play
        )
        for (lane, binding), mutant_ in zip(lanes, applied, strict=True)
    ]
    outcomes = run_jobs(jobs, workers=workers, timeout_s=timeout_s, stalled_per_worker=0)
    reports = []
    for (lane, binding), mutant_, outcome in zip(lanes, applied, outcomes, strict=True):
        wall_ms = outcome.duration_s * 1000.0
        if outcome.status is ChildStatus.OK and isinstance(outcome.value, LaneReport):
            reports.append(replace(outcome.value, elapsed_ms=wall_ms))
            continue
        detail = outcome.detail.strip() or "no detail"
        reports.append(
            LaneReport(
                lane=lane.name,
                target=lane.target.name,
                loop=lane.loop.value,
                status=LaneStatus.ERROR,
                binding=binding,
                elapsed_ms=wall_ms,
                started=now_iso(),
                error=f"lane {lane.name!r} child ended with {outcome.status.value!r}: {detail}",
                mutant=mutant_.name if mutant_ else None,
            )
        )
    return reports

