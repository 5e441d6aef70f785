"""The bench: admit the checks, run the admitted ones on every lane, write results and report."""

from __future__ import annotations

import dataclasses
import datetime as dt
import functools
import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from checks.base import CheckSpec
from harness.admission import GRACE_S, AdmissionConfig, admit
from harness.cache import AdmissionCache
from harness.execute import RunOptions, child_finding, error_finding, run_check, sdk_version
from harness.ground.child import ChildOutcome, run_jobs
from harness.ground.model import Admission, ExitCode, Finding, Verdict, exit_code
from harness.ground.services import ServiceManager
from harness.lanes import PreparedLanes, prepare_lanes, service_failure, services_for_checks
from harness.progress import Progress
from harness.report import render_markdown
from harness.results import (
    atomic_write_text,
    new_run_id,
    run_document,
    run_stem,
    validate,
    writable_folder,
)
from harness.run_coverage import RunCoverage, known_selection, not_admitted
from targets.base import TargetSpec

RESULTS_DIR = Path("results")


@dataclass(frozen=True)
class BenchConfig:
    """What a bench run measures and how."""

    lanes: tuple[TargetSpec, ...]
    checks: tuple[CheckSpec, ...]
    run_seed: int = 0
    reruns: int = 3
    workers: int = 1
    admission_workers: int = 2
    params: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    loop: str = "asyncio"
    out_dir: Path = RESULTS_DIR
    cache: AdmissionCache = field(default_factory=AdmissionCache)
    quiet: bool = False
    manager: ServiceManager | None = None
    # Called in the parent when a lane's child starts: progress displays, fault drills.
    on_lane_start: Callable[[CheckSpec, TargetSpec], None] | None = None
    generated: bool = True


@dataclass(frozen=True)
class BenchOutcome:
    """What a bench run produced: the document, where it was written, and its exit code."""

    document: dict[str, Any]
    json_path: Path
    report_path: Path
    code: ExitCode


def _judge(check: CheckSpec, lane: TargetSpec, opts: RunOptions) -> Finding:
    return run_check(check, lane, opts)


class BenchInterrupted(KeyboardInterrupt):
    """The run was interrupted; ``written`` names the files of what it had measured."""

    def __init__(self, written: tuple[Path, ...]) -> None:
        super().__init__()
        self.written = written


def result_paths(out_dir: Path, sdk: str, started: dt.datetime,
                 run_id: str) -> tuple[Path, Path]:
    """Where the JSON result and its Markdown report go: named by start time and run id."""
    stem = run_stem(started, run_id, sdk)
    return out_dir / f"{stem}.json", out_dir / f"{stem}.md"


def _coverage(config: BenchConfig, prepared: PreparedLanes,
              admissions: tuple[Admission, ...], complete: bool) -> RunCoverage:
    lanes = [lane.name for lane in config.lanes]
    checks = [c.id for c in config.checks]
    admitted = {a.check_id for a in admissions if a.admitted}
    all_lanes, all_checks = known_selection()
    return RunCoverage(
        lanes_selected=tuple(lanes),
        lanes_measured=tuple(lane.name for lane in prepared.lanes),
        checks_selected=tuple(checks),
        checks_admitted=tuple(c for c in checks if c in admitted),
        every_lane=all_lanes <= set(lanes),
        every_check=all_checks <= set(checks),
        complete=complete,
        lanes_not_measured={n.name: n.reason for n in prepared.not_measured},
        checks_not_measured={a.check_id: not_admitted(a.reasons) for a in admissions
                             if not a.admitted},
    )


def run_bench(config: BenchConfig) -> BenchOutcome:
    """Admit, measure, write; what was measured is written even when the run is interrupted.

    The results folder is checked to be writable first; a run's files are named by its start
    time and run id and never replace another run's.
    """
    writable_folder(config.out_dir)
    started = dt.datetime.now(dt.timezone.utc)
    run_id = new_run_id()
    t0 = time.perf_counter()
    sdk = sdk_version()
    admissions: tuple[Admission, ...] = admit(
        config.checks,
        AdmissionConfig(reruns=config.reruns, workers=config.admission_workers,
                        run_seed=config.run_seed, params=config.params, cache=config.cache,
                        quiet=config.quiet, generated=config.generated,
                        services=(services_for_checks(config.checks, config.manager)
                                  if config.manager is not None else {})),
    )
    prepared = (prepare_lanes(config.lanes, config.manager) if config.manager is not None
                else PreparedLanes(config.lanes))
    admitted = {a.check_id for a in admissions if a.admitted}
    for a in admissions:
        if not a.admitted and not config.quiet:
            print(f"not admitted: {a.check_id}: " + "; ".join(a.reasons))
    jobs: list[tuple[CheckSpec, TargetSpec, RunOptions]] = []
    for check in config.checks:
        if check.id not in admitted:
            continue
        opts = RunOptions(params=check.resolve_params(config.params.get(check.id)),
                          run_seed=config.run_seed, loop=config.loop,
                          services=prepared.services)
        for lane in prepared.lanes:
            jobs.append((check, lane, opts))
    progress = Progress("bench", len(jobs), quiet=config.quiet)
    findings: list[Finding | None] = [None] * len(jobs)
    limit_s = max((c.timeout_s for c in config.checks), default=60) + GRACE_S

    def done(index: int, outcome: ChildOutcome) -> None:
        check, lane, opts = jobs[index]
        finding = child_finding(check, lane, opts, outcome, limit_s, lane_child=True)
        if config.manager is not None and finding.verdict in (Verdict.VIOLATED, Verdict.ERROR):
            died = service_failure(lane, config.manager)
            if died is not None:
                finding = error_finding(check, lane, opts, f"the lane's server died: {died}",
                                        None, finding.duration_s, finding.seeds)
        if lane.service is not None:
            finding = dataclasses.replace(
                finding, service_version=prepared.versions.get(lane.service))
        findings[index] = finding
        progress.advance(f"{check.id} on {lane.name}: {findings[index].verdict.value}")  # type: ignore[union-attr]

    interrupted = False
    observer = config.on_lane_start

    def started_lane(index: int) -> None:
        if observer is not None:
            observer(jobs[index][0], jobs[index][1])

    try:
        run_jobs([functools.partial(_judge, *job) for job in jobs], workers=config.workers,
                 timeout_s=limit_s,
                 on_done=done, on_start=started_lane)
    except KeyboardInterrupt:
        interrupted = True
    measured = [f for f in findings if f is not None]
    parameters = {
        "run_seed": config.run_seed,
        "reruns": config.reruns,
        "loop": config.loop,
        "workers": config.workers,
        "lanes": [lane.name for lane in prepared.lanes],
        "checks": {c.id: c.resolve_params(config.params.get(c.id)) for c in config.checks},
        "complete": not interrupted,
    }
    document = run_document(
        sdk=sdk, parameters=parameters, findings=measured, admissions=admissions,
        not_measured=[n.to_json() for n in prepared.not_measured],
        started=started.isoformat(timespec="seconds"),
        duration_s=time.perf_counter() - t0,
    )
    document["run_id"] = run_id
    document["coverage"] = _coverage(config, prepared, admissions, not interrupted).to_json()
    document["lanes"] = [lane.to_json() for lane in prepared.lanes]
    document["services"] = {name: info.to_json() for name, info in (
        config.manager.infos.items() if config.manager is not None else ())}
    document["checks"] = [c.to_json() for c in config.checks]
    validate(document)
    json_path, report_path = result_paths(config.out_dir, sdk, started, run_id)
    if interrupted and not measured:
        raise BenchInterrupted(())
    written: list[Path] = []
    try:
        for path, text in ((json_path, json.dumps(document, indent=1, ensure_ascii=False)
                            + "\n"), (report_path, render_markdown(document))):
            atomic_write_text(path, text, replace=False)
            written.append(path)
    except KeyboardInterrupt:  # a second interrupt while writing: say what was written
        raise BenchInterrupted(tuple(written)) from None
    if interrupted:
        raise BenchInterrupted(tuple(written))
    return BenchOutcome(document, json_path, report_path, exit_code(measured))
