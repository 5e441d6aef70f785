"""The bench: admit the checks, run the admitted ones on every lane, write results and report."""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import functools
import json
import os
import signal
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from arib.admission import GRACE_S, AdmissionConfig, admit
from arib.caches.verdicts import AdmissionCache
from arib.checks.base import CheckSpec
from arib.execute import (
    RUN_STALL_AFTER_SHARE,
    RunOptions,
    child_finding,
    error_finding,
    run_check,
    sdk_version,
)
from arib.ground.child import ChildOutcome, JobsRefused, refusing_jobs, run_jobs
from arib.ground.errors import ResultsError
from arib.ground.files import atomic_write_text, writable_folder
from arib.ground.interrupts import stops_held
from arib.ground.keys import Cell
from arib.ground.model import Admission, ExitCode, Finding, Verdict, exit_code
from arib.ground.proctime import first_fork_s, forget_first_fork, process_age_s
from arib.ground.services import ServiceManager
from arib.lanes import (
    PreparedLanes,
    begin_services,
    prepare_lanes,
    service_failure,
    services_for_checks,
)
from arib.progress import Progress
from arib.reports.markdown import render_markdown
from arib.runs.baseline import read_baseline
from arib.runs.compare import GateResult, gate
from arib.runs.coverage import RunCoverage, known_selection, not_admitted
from arib.runs.remeasure import Remeasured, RemeasureInterrupted, remeasure, unjudged_flips
from arib.runs.results import new_run_id, run_document, run_stem, validate
from arib.runs.shard import Split, cell_durations
from arib.targets.base import TargetSpec
from arib.warm import warm, warm_all

RESULTS_DIR = Path("results")


# Cells measured at once by default (never more than the cores). Two at a time measured the
# same verdict in all 440 cells as one at a time, run after run (2026-12-02: two runs of each,
# interleaved, 0.24.0), in half the time; a race whose rate depends on the load (DRAIN-001,
# LIMIT-001 on PostgreSQL) moves its violating-trial count either way, never its verdict.
DEFAULT_WORKERS = 2


def default_workers() -> int:
    """The bench's ``--workers`` when none is given: DEFAULT_WORKERS, at most the cores."""
    return max(1, min(DEFAULT_WORKERS, os.cpu_count() or 1))


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
    shard: Split | None = None  # measure only this shard's (check, lane) cells


@dataclass(frozen=True)
class BenchOutcome:
    """What a bench run produced: the document, where it was written, and its exit code."""

    document: dict[str, Any]
    json_path: Path
    report_path: Path
    code: ExitCode
    # The run against its version's accepted baseline, read once (the flips it measured again
    # are judged on it too); None when there is none, and for a shard, whose gate is the
    # merged run's.
    gate: GateResult | None = None


def _judge(check: CheckSpec, lane: TargetSpec, opts: RunOptions) -> Finding:
    return run_check(check, lane, opts)


class BenchInterrupted(KeyboardInterrupt):
    """The run was interrupted; ``written`` names the files of what it had measured, and
    ``complete`` says whether every cell had been measured (a stop after the measuring: the
    run is whole, but no regression gate judged it)."""

    def __init__(self, written: tuple[Path, ...], complete: bool = False) -> None:
        super().__init__()
        self.written = written
        self.complete = complete


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
        shard=str(config.shard.spec) if config.shard is not None else None,
    )


@dataclass(frozen=True)
class LaneRun:
    """One admitted check measured on one lane, with the options it runs under."""

    check: CheckSpec
    lane: TargetSpec
    opts: RunOptions

    @property
    def cell(self) -> Cell:
        """The check on the lane."""
        return Cell(self.check.id, self.lane.name)


def _shard_config(config: BenchConfig) -> tuple[BenchConfig, frozenset[Cell] | None]:
    """The config cut to the checks and lanes of this shard's cells, and the cells."""
    if config.shard is None:
        return config, None
    cells = [Cell(c.id, lane.name) for c in config.checks for lane in config.lanes]
    mine = config.shard.keep({cell: config.shard.durations.get(cell) for cell in cells})
    return dataclasses.replace(
        config,
        checks=tuple(c for c in config.checks if any(x.check_id == c.id for x in mine)),
        lanes=tuple(t for t in config.lanes if any(x.lane == t.name for x in mine))), mine


def _admit(config: BenchConfig, services: bool = True) -> tuple[Admission, ...]:
    """The bench's admission of its checks, with the services their mutants' lanes need
    (``services``: False when nothing is to run)."""
    def warm_cells() -> None:  # the measured cells' backends
        warm_all((c, lane) for c in config.checks for lane in config.lanes)

    return admit(
        config.checks,
        AdmissionConfig(reruns=config.reruns, workers=config.admission_workers,
                        run_seed=config.run_seed, params=config.params, cache=config.cache,
                        quiet=config.quiet, generated=config.generated,
                        # imported while a service's initdb runs, if one does, else while
                        # the gates end
                        services=(services_for_checks(config.checks, config.manager,
                                                      meanwhile=warm_cells)
                                  if config.manager is not None and services else {}),
                        while_waiting=warm_cells),
    )


def defers_sample(cache: AdmissionCache) -> bool:
    """Whether the bench may take its verdict cache's re-judged sample after the cells: there
    is a store, and a share of it to sample that is not all of it (``--verify-cache`` judges
    every pair again first, as ``admit`` does)."""
    return cache.root is not None and 0.0 < cache.verify < 1.0


def _admit_from_cache(config: BenchConfig) -> tuple[tuple[Admission, ...], bool]:
    """The admissions, and whether their cache's sample is still to be taken (after the
    cells: ``_take_sample``).

    Admission is tried first with no hit sampled, no child and no service. When the caches
    answer all of it, the sample waits for the cells, so that the first cell starts at once;
    the cells stand only if the sample then agrees (``_take_sample``). When anything is to be
    judged now, that try stops before it runs anything, and admission runs as it always
    did, its sample first."""
    if not defers_sample(config.cache):
        return _admit(config), False
    try:
        with config.cache.unsampled(), refusing_jobs():
            return _admit(dataclasses.replace(config, quiet=True), services=False), True
    except JobsRefused:
        config.cache.reset_counts()
        return _admit(config), False


def _take_sample(config: BenchConfig, prepared: PreparedLanes, admissions: tuple[Admission, ...],
                 runs: list[LaneRun], measured: list[Finding], cells: frozenset[Cell] | None
                 ) -> tuple[tuple[Admission, ...], list[LaneRun], list[Finding], bool]:
    """After the cells, admission again with the cache's re-judged sample: its admissions, the
    runs and findings of the checks it admits, and whether an interrupt cut it short. Where
    the sample disagreed (the cache is discarded and every check admitted again from
    nothing), a check no longer admitted loses its cells and one newly admitted is measured
    now."""
    if not config.quiet:
        print("[admit] the verdict cache's re-judged sample, taken after the cells (they "
              "stand only if it agrees)", file=sys.stderr)
    config.cache.reset_counts()
    verified = _admit(config)
    admitted = {a.check_id for a in verified if a.admitted}
    if admitted == {a.check_id for a in admissions if a.admitted}:
        return verified, runs, measured, False
    now = [r for r in _lane_runs(config, prepared, verified) if cells is None or r.cell in cells]
    before = {Cell(f.invariant_id, f.target): f for f in measured}
    todo = [r for r in now if r.cell not in before]
    if not config.quiet:
        print(f"[admit] the sample disagreed: {len(measured)} cell(s) measured before, "
              f"{len(todo)} to measure for the checks admitted now", file=sys.stderr)
    found, interrupted, _ = _measure(config, prepared, todo,
                                     cell_durations(config.out_dir, sdk_version()))
    by_cell = {**before, **{Cell(f.invariant_id, f.target): f for f in found}}
    return (verified, now, [by_cell[r.cell] for r in now if r.cell in by_cell], interrupted)


def _say_not_admitted(config: BenchConfig, admissions: tuple[Admission, ...]) -> None:
    for a in admissions:
        if not a.admitted and not config.quiet:
            print(f"not admitted: {a.check_id}: " + "; ".join(a.reasons))


def _lane_runs(config: BenchConfig, prepared: PreparedLanes,
               admissions: tuple[Admission, ...]) -> list[LaneRun]:
    """Every admitted check on every lane that can be measured, in the order of the checks."""
    admitted = {a.check_id for a in admissions if a.admitted}
    return [LaneRun(check, lane, RunOptions(
                params=check.resolve_params(config.params.get(check.id)),
                run_seed=config.run_seed, loop=config.loop, services=prepared.services))
            for check in config.checks if check.id in admitted for lane in prepared.lanes]


def longest_first(runs: list[LaneRun], durations: Mapping[Cell, float]) -> list[int]:
    """The indexes of ``runs`` in the order to start them: the longest cells first, by the
    seconds a previous run recorded (a cell without a record counts as the longest), so that
    the last cell to end is a short one; ties keep their order."""
    def seconds(index: int) -> float:
        return durations.get(runs[index].cell, float("inf"))

    return sorted(range(len(runs)), key=lambda i: -seconds(i))


def _measure(config: BenchConfig, prepared: PreparedLanes, runs: list[LaneRun],
             durations: Mapping[Cell, float]) -> tuple[list[Finding], bool, float | None]:
    """The findings of ``runs`` (each in a forked child, the longest first), in the order of
    ``runs``, whether an interrupt cut them short (what was measured before it is kept), and
    the process's age in seconds when the first of them started (None: none did)."""
    progress = Progress("bench", len(runs), quiet=config.quiet)
    findings: list[Finding | None] = [None] * len(runs)
    limits = [r.check.timeout_s + GRACE_S for r in runs]
    order = longest_first(runs, durations)  # job j runs runs[order[j]]

    def done(job: int, outcome: ChildOutcome) -> None:
        index = order[job]
        run = runs[index]
        finding = child_finding(run.check, run.lane, run.opts, outcome, limits[index],
                                lane_child=True)
        if config.manager is not None and finding.verdict in (Verdict.VIOLATED, Verdict.ERROR):
            died = service_failure(run.lane, config.manager)
            if died is not None:
                finding = error_finding(run.check, run.lane, run.opts,
                                        f"the lane's server died: {died}", None,
                                        finding.duration_s, finding.seeds)
        if run.lane.service is not None:
            finding = dataclasses.replace(
                finding, service_version=prepared.versions.get(run.lane.service))
        findings[index] = finding
        progress.advance(f"{run.cell}: {finding.verdict.value}")

    observer = config.on_lane_start
    first_cell: list[float | None] = []

    def started_lane(job: int) -> None:
        if not first_cell:
            first_cell.append(process_age_s())
        if observer is not None:
            observer(runs[order[job]].check, runs[order[job]].lane)

    interrupted = False
    try:
        run_jobs([functools.partial(_judge, runs[i].check, runs[i].lane, runs[i].opts)
                  for i in order],
                 workers=config.workers, timeout_s=[limits[i] for i in order], on_done=done,
                 on_start=started_lane, stall_after_share=RUN_STALL_AFTER_SHARE,
                 before_fork=lambda job: warm(runs[order[job]].check, runs[order[job]].lane))
    except KeyboardInterrupt:
        interrupted = True
    return ([f for f in findings if f is not None], interrupted,
            first_cell[0] if first_cell else None)


def _document(config: BenchConfig, prepared: PreparedLanes, admissions: tuple[Admission, ...],
              measured: list[Finding], interrupted: bool, started: dt.datetime,
              duration_s: float) -> dict[str, Any]:
    """The run's JSON document, validated against its schema."""
    parameters = {
        "run_seed": config.run_seed,
        "reruns": config.reruns,
        "loop": config.loop,
        "workers": config.workers,
        "lanes": [lane.name for lane in prepared.lanes],
        "checks": {c.id: c.resolve_params(config.params.get(c.id)) for c in config.checks},
        "complete": not interrupted,
    }
    return run_document(
        sdk=sdk_version(), parameters=parameters, findings=measured, admissions=admissions,
        not_measured=[n.to_json() for n in prepared.not_measured],
        started=started.isoformat(timespec="seconds"), duration_s=duration_s,
    )


def _remeasure_flips(config: BenchConfig, prepared: PreparedLanes, runs: list[LaneRun],
                     measured: list[Finding], document: Mapping[str, Any],
                     baseline: Mapping[str, Any]
                     ) -> tuple[list[Finding], list[Remeasured], bool]:
    """``measured`` with every cell that flipped in all its trials against ``baseline``, too
    few of them for the gate's test, measured again with more trials (arib.runs.remeasure);
    what was; and whether an interrupt stopped it (the cells not yet measured again keep
    their first measurement)."""
    result = gate(baseline, document)
    if not unjudged_flips(result):
        return measured, [], False
    by_cell = {run.cell: run for run in runs}
    new: dict[Cell, Finding] = {}

    def measure(cell: Cell, trials: int) -> Mapping[str, Any] | None:
        run = by_cell[cell]
        opts = dataclasses.replace(run.opts, params={**run.opts.params,
                                                     run.check.trials_param: trials})
        if not config.quiet:
            print(f"{cell}: every trial changed against the baseline, too few trials to "
                  f"judge: measured again with {trials} trials")
        found, stopped, _ = _measure(config, prepared, [LaneRun(run.check, run.lane, opts)],
                                     {})
        if stopped:  # the first measurement stands, and the run stops here
            raise KeyboardInterrupt
        if not found:
            return None
        new[cell] = found[0]
        return found[0].to_json()

    checks = {run.check.id: run.check for run in runs}
    stopped = False
    try:
        again = remeasure(result, {i: c.timeout_s for i, c in checks.items()},
                          {i: c.trials_param for i, c in checks.items()}, measure)
    except RemeasureInterrupted as exc:
        again, stopped = exc.done, True
    for r in again:
        print(r.describe())
    return [new.get(Cell(f.invariant_id, f.target), f) for f in measured], again, stopped


def startup_figures(first_child_s: float | None,
                    first_cell_s: float | None) -> dict[str, float | None]:
    """How soon the run got going, in seconds of the process's age (None: not known, or no
    such child): its first child (an admission gate, or a cell) and its first measured cell."""
    def rounded(value: float | None) -> float | None:
        return None if value is None else round(value, 3)

    return {"first_child_s": rounded(first_child_s), "first_cell_s": rounded(first_cell_s)}


def _write(paths: tuple[Path, Path], document: dict[str, Any]) -> list[Path]:
    """Write the JSON and the Markdown report, never replacing a file; an interrupt while
    writing says what was written."""
    written: list[Path] = []
    try:
        for path, text in zip(paths, (json.dumps(document, indent=1, ensure_ascii=False)
                                      + "\n", render_markdown(document)), strict=True):
            atomic_write_text(path, text, replace=False)
            written.append(path)
    except KeyboardInterrupt:
        raise BenchInterrupted(tuple(written)) from None
    return written


def _finish(config: BenchConfig, prepared: PreparedLanes, admissions: tuple[Admission, ...],
            measured: list[Finding], interrupted: bool, started: dt.datetime, t0: float,
            document: dict[str, Any], again: list[Remeasured], run_id: str,
            first_cell_s: float | None) -> tuple[dict[str, Any], list[Path]]:
    """Complete the run's document (with the cells measured again, if any) and write it: the
    document and the files written. BenchInterrupted when nothing was measured."""
    if again:
        document = _document(config, prepared, admissions, measured, interrupted, started,
                             time.perf_counter() - t0)
        document["remeasured"] = [r.to_json() for r in again]
    document["run_id"] = run_id
    document["coverage"] = _coverage(config, prepared, admissions, not interrupted).to_json()
    document["lanes"] = [lane.to_json() for lane in prepared.lanes]
    document["services"] = {name: info.to_json() for name, info in (
        config.manager.infos.items() if config.manager is not None else ())}
    document["checks"] = [c.to_json() for c in config.checks]
    document["startup"] = startup_figures(first_fork_s(), first_cell_s)
    if config.shard is not None:
        document.update(command="bench", shard=config.shard.to_json())
    validate(document)
    if interrupted and not measured:
        raise BenchInterrupted(())
    return document, _write(result_paths(config.out_dir, sdk_version(), started, run_id),
                            document)


def run_bench(config: BenchConfig) -> BenchOutcome:
    """Admit, measure, write; what was measured is written even when the run is interrupted.

    The results folder is checked to be writable first; a run's files are named by its start
    time and run id and never replace another run's.
    """
    writable_folder(config.out_dir)
    forget_first_fork()
    started = dt.datetime.now(dt.timezone.utc)
    run_id = new_run_id()
    t0 = time.perf_counter()
    mine, cells = _shard_config(config)
    if config.manager is not None:  # the measured lanes' services start during admission
        begin_services(mine.lanes, config.manager)
    admissions, sample_later = _admit_from_cache(mine)
    prepared = (prepare_lanes(mine.lanes, config.manager) if config.manager is not None
                else PreparedLanes(mine.lanes))
    runs = [r for r in _lane_runs(mine, prepared, admissions)
            if cells is None or r.cell in cells]
    measured, interrupted, first_cell_s = _measure(
        config, prepared, runs, cell_durations(config.out_dir, sdk_version()))
    if sample_later and not interrupted:
        try:
            admissions, runs, measured, interrupted = _take_sample(
                mine, prepared, admissions, runs, measured, cells)
        except KeyboardInterrupt:  # the cells are kept; the run is written as interrupted
            interrupted = True
            print("interrupted while the verdict cache's sample was re-judged: the cells "
                  "measured are written, as an interrupted run that no gate judges",
                  file=sys.stderr)
    _say_not_admitted(config, admissions)
    # Once the cells are measured, a stop must not lose them: outside the measuring again of
    # flips (children, interruptible), a stop is held until the files are written, then
    # delivered. Either way the run is whole and written so, and no gate judges it.
    again: list[Remeasured] = []
    baseline, unreadable, stopped = None, None, False
    with stops_held() as held:
        document = _document(config, prepared, admissions, measured, interrupted, started,
                             time.perf_counter() - t0)
        if config.shard is None and not interrupted:  # a shard's gate is the merged run's
            try:
                baseline = read_baseline(config.out_dir, document["sdk"]["version"])
            except ResultsError as exc:  # said once the run's own results are written
                unreadable = exc
    stops = list(held)
    if baseline is not None and not stops:
        measured, again, stopped = _remeasure_flips(config, prepared, runs, measured,
                                                    document, baseline)
    with stops_held() as held:
        document, written = _finish(config, prepared, admissions, measured, interrupted,
                                    started, t0, document, again, run_id, first_cell_s)
    stops += held
    if interrupted:
        raise BenchInterrupted(tuple(written))
    if stops or stopped:
        with contextlib.suppress(KeyboardInterrupt):  # its handler records which stop it was
            for signum in stops[:1]:
                signal.raise_signal(signum)
        raise BenchInterrupted(tuple(written), complete=True)
    json_path, report_path = written
    if unreadable is not None:
        raise ResultsError(
            f"the accepted baseline cannot be read, so the regression gate cannot judge this "
            f"run: {unreadable}; this run was written first: {json_path}; fix: restore the "
            f"baseline from git, or accept a run with `accept`") from None
    return BenchOutcome(document, json_path, report_path, exit_code(measured),
                        None if baseline is None else gate(baseline, document))
