"""Run files and accepted baselines: finding the newest run, accepting a run cell by cell.

Each run has its own files (named by start time and run id), so two runs at once never write
the same file. A baseline is read, merged and written under a lock (fcntl.flock on
``baselines/.arib.lock``), atomically, so two `accept`s at once never lose an update.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from arib.ground.errors import ResultsError, UsageError
from arib.ground.family import active_family
from arib.ground.files import atomic_write_text, folder_lock
from arib.ground.invocations import bench_command
from arib.ground.keys import Cell
from arib.runs.compare import GateResult, cells, gate, version_key
from arib.runs.coverage import RunCoverage, coverage_of
from arib.runs.results import read_results, run_glob, started_utc


@dataclass(frozen=True)
class RunFile:
    """A run file in a results folder, with what is needed to order and choose it."""

    path: Path
    sdk: str
    started: dt.datetime
    partial: bool


def run_files(out_dir: Path, sdk: str | None = None) -> list[RunFile]:
    """The run files of ``out_dir`` (day-named older ones too), oldest first by start time."""
    found = []
    for path in out_dir.glob(run_glob(sdk)):
        document = read_results(path)
        found.append(RunFile(path, document["sdk"]["version"], started_utc(document["started"]),
                             coverage_of(document).partial))
    return sorted(found, key=lambda r: (r.started, r.path.name))


def latest_run(out_dir: Path, sdk: str) -> Path:
    """The newest run file of an SDK version, whole or partial."""
    runs = run_files(out_dir, sdk)
    if not runs:
        raise ResultsError(f"no run of {active_family().name} {sdk!r} in {str(out_dir)!r}; run "
                           f"`{bench_command(sdk, active_family().name)}` first")
    return runs[-1].path


def newest_whole_runs(out_dir: Path) -> tuple[list[Path], list[RunFile]]:
    """The newest whole (not partial) run per version, by version; and the partial runs
    newer than it, which a comparison across versions leaves out."""
    newest: dict[str, RunFile] = {}
    for run in run_files(out_dir):
        if not run.partial:
            newest[run.sdk] = run
    left_out = [r for r in run_files(out_dir) if r.partial
                and (r.sdk not in newest or r.started > newest[r.sdk].started)]
    chosen = sorted(newest.values(), key=lambda r: version_key(r.sdk))
    return [r.path for r in chosen], left_out


def baseline_path(out_dir: Path, sdk: str) -> Path:
    """Where the accepted results of an SDK version live."""
    return out_dir / "baselines" / f"{active_family().stem(sdk)}.json"


def read_baseline(out_dir: Path, sdk: str) -> dict[str, Any] | None:
    """The accepted baseline of SDK version ``sdk`` in ``out_dir``, read and validated; None if
    none exists."""
    path = baseline_path(out_dir, sdk)
    if not path.exists():
        return None
    return read_results(path)


def regressions(document: Mapping[str, Any], out_dir: Path) -> GateResult | None:
    """The run against the accepted baseline of its SDK version; None if none exists."""
    baseline = read_baseline(out_dir, document["sdk"]["version"])
    return None if baseline is None else gate(baseline, document)


@dataclass(frozen=True)
class Accepted:
    """What `accept` did to a baseline."""

    path: Path
    updated: int  # cells the run measured, now the accepted verdicts
    kept: int  # cells of the previous baseline the run did not measure, kept as they were
    removed: int  # cells of the previous baseline the run should have measured and has not
    created: bool = False  # there was no baseline of the version: this one is new
    partial: bool = False  # the run was partial (a subset of lanes or checks, or interrupted)

    def describe(self) -> str:
        """One line: the baseline's path and its cells updated, kept and removed; or that it
        was created, and from a partial run with only the cells that run measured."""
        if self.created:
            return (f"{self.path}: created, there was no baseline of this version: "
                    f"{self.updated} cell(s) from the run"
                    + (", and only those: the run is partial, so every cell it did not "
                       "measure has no baseline until a run of it is accepted"
                       if self.partial else ""))
        return (f"{self.path}: {self.updated} cell(s) from the run, {self.kept} kept from the "
                f"previous baseline (not measured in this run), {self.removed} removed")


def merge(previous: Mapping[str, Any] | None, document: Mapping[str, Any],
          source: str) -> dict[str, Any]:
    """The new baseline: the run's cells, and the previous baseline's cells it did not measure.

    A cell of the previous baseline is kept when the run did not measure it (a lane not
    selected or whose server was missing, a check not selected, an interruption); it is
    removed when the run measured its lane and selected its check but has no finding for it,
    or (in a whole run) when its lane or check no longer exists. What was done is recorded
    under ``accepted``.
    """
    coverage = coverage_of(document)
    run = cells(document)
    kept, removed = [], 0
    for cell, finding in (cells(previous) if previous is not None else {}).items():
        if cell in run:
            continue
        stale = not coverage.partial and (cell.lane not in coverage.lanes_selected
                                          or cell.check_id not in coverage.checks_selected)
        if stale or coverage.why_not_measured(cell, run) is None:
            removed += 1
        else:
            kept.append(finding)
    merged = json.loads(json.dumps(document))
    merged["findings"] = sorted([*kept, *document["findings"]],
                                key=Cell.of)
    if coverage.partial and previous is not None:
        merged.update(_record_beside(previous, merged, coverage))
    merged["accepted"] = {
        "run": source,
        "run_id": document.get("run_id"),
        "at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "partial": coverage.partial,
        "updated": len(run),
        "kept": len(kept),
        "removed": removed,
        "created": previous is None,
        "kept_from": None if previous is None else (
            (previous.get("accepted") or {}).get("run") or previous.get("started")),
    }
    return merged


def _by(key: str, previous: Sequence[Mapping[str, Any]], run: Sequence[Mapping[str, Any]],
        selected: Collection[str]) -> list[Mapping[str, Any]]:
    """The run's entries, and the previous ones (keyed by ``key``) of what it did not select."""
    return [*(e for e in previous if e[key] not in selected), *run]


def _record_beside(previous: Mapping[str, Any], merged: Mapping[str, Any],
                   coverage: RunCoverage) -> dict[str, Any]:
    """What a partial run's baseline records of its checks and lanes: the run's record of what
    it selected, the previous baseline's of the rest, whose cells it keeps. Without this the
    baseline would say that only the run's checks were checks (or admitted) on its version,
    and its cells of every other check would look unaccounted for."""
    before = coverage_of(previous)
    checks, lanes = set(coverage.checks_selected), set(coverage.lanes_selected)

    def union(old: Sequence[str], new: Sequence[str], drop: Collection[str]) -> tuple[str, ...]:
        return tuple(dict.fromkeys([*(x for x in old if x not in drop), *new]))

    whole = RunCoverage(
        lanes_selected=union(before.lanes_selected, coverage.lanes_selected, ()),
        lanes_measured=union(before.lanes_measured, coverage.lanes_measured, lanes),
        checks_selected=union(before.checks_selected, coverage.checks_selected, ()),
        checks_admitted=union(before.checks_admitted, coverage.checks_admitted, checks),
        every_lane=before.every_lane or coverage.every_lane,
        every_check=before.every_check or coverage.every_check,
        complete=before.complete,  # the cells an interruption left out are the kept ones
        lanes_not_measured={**{k: v for k, v in before.lanes_not_measured.items()
                               if k not in lanes}, **coverage.lanes_not_measured},
        checks_not_measured={**{k: v for k, v in before.checks_not_measured.items()
                                if k not in checks}, **coverage.checks_not_measured},
    )
    return {"coverage": whole.to_json(),
            "checks": _by("id", previous.get("checks", ()), merged.get("checks", ()), checks),
            "admission": _by("check_id", previous.get("admission", ()),
                             merged.get("admission", ()), checks)}


def refuse_partial(run: Path, partial: bool = False) -> dict[str, Any]:
    """The run's document, once it may be accepted: a partial run (a subset of lanes or
    checks, or interrupted) raises UsageError unless ``partial``."""
    document = read_results(run)
    coverage = coverage_of(document)
    sdk = document["sdk"]["version"]
    if coverage.partial and not partial:
        raise UsageError(
            f"{str(run)!r} is a partial run ({'; '.join(coverage.partial_reasons())}): "
            f"accepting it would stand for the whole baseline of {document['sdk']['name']} {sdk}; "
            f"accept only the cells it measured with `python -m arib accept --partial "
            f"{run}`, or accept a whole run (`{bench_command(sdk, active_family().name)}`)")
    return document


def accept(run: Path, out_dir: Path, partial: bool = False) -> Accepted:
    """Make a run the accepted baseline of its SDK version, cell by cell (the one update).

    A partial run is refused unless ``partial`` (see refuse_partial); then, as always, only
    the cells it measured change.
    """
    document = refuse_partial(run, partial)
    target = baseline_path(out_dir, document["sdk"]["version"])
    with folder_lock(target.parent):
        previous = read_results(target) if target.exists() else None
        merged = merge(previous, document, run.name)
        atomic_write_text(target, json.dumps(merged, indent=1, ensure_ascii=False) + "\n")
    done = merged["accepted"]
    return Accepted(target, done["updated"], done["kept"], done["removed"],
                    created=previous is None, partial=bool(done["partial"]))


# What of a check's definition decides whether it is admitted and what it finds: a baseline
# accepted with other values says nothing of what today's checks would measure.
DEFINITION = ("params", "mutants", "generated", "equivalent", "requires_close",
              "requires_terminal_close", "timeout_s", "reference")


def _definition(check: Mapping[str, Any]) -> dict[str, Any]:
    return {field: check.get(field) for field in DEFINITION}


def _uncovered(baseline: Mapping[str, Any], run: Mapping[str, Any], what: str) -> list[str]:
    """A line per check admitted in ``run`` with a lane measured there but no cell in
    ``baseline``, naming the lanes (``what``: which run)."""
    coverage = coverage_of(run)
    have = set(cells(baseline))
    lines = []
    for check in coverage.checks_admitted:
        lanes = [lane for lane in coverage.lanes_measured if Cell(check, lane) not in have]
        if lanes:
            lines.append(f"{check} is admitted in {what} and has no cell on "
                         f"{len(lanes)} lane(s) measured there: {', '.join(lanes)}")
    return lines


def baseline_gaps(baseline: Mapping[str, Any], newest: Mapping[str, Any] | None,
                  checks: Sequence[Mapping[str, Any]] | None = None) -> list[str]:
    """Why a committed baseline no longer stands for its version, one line each; [] when it
    is whole.

    It must hold a cell for every check admitted and every lane measured in the run it was
    accepted from and in ``newest`` (the newest whole run of its version in the results
    folder). Given today's ``checks`` (their ``to_json()``), a check that was not admitted
    there (or no check of that run) must still have the definition it had (what decides
    admission: parameters, paired and generated mutants, waivers, time limit): added or
    redefined since, it may be admitted now where the baseline has no cell, and the bench of a
    fresh clone would then fail its gate with cells ``new`` (ARIB-LGSETUP-001 on
    cp1.0.12+sq1.0.4+pg1.0.9, given a generated mutant it kills there after acceptance)."""
    version = f"{baseline['sdk']['name']} {baseline['sdk']['version']}"
    problems = _uncovered(baseline, baseline, "the run it was accepted from")
    if newest is not None:
        problems += _uncovered(baseline, newest, f"the newest run of {version} "
                                                 f"({newest.get('run_id') or newest['started']})")
    if checks is not None:
        recorded = {c["id"]: c for c in baseline.get("checks", ())}
        admitted = set(coverage_of(baseline).checks_admitted)
        for check in checks:
            was = recorded.get(check["id"])
            if was is None:
                problems.append(f"{check['id']} was no check of the run it was accepted from: "
                                f"it may be admitted on {version} now, with no cell here")
            elif check["id"] not in admitted and _definition(was) != _definition(check):
                changed = [f for f in DEFINITION if was.get(f) != check.get(f)]
                problems.append(f"{check['id']} was not admitted in the run it was accepted "
                                f"from, and its definition changed since "
                                f"({', '.join(changed)}): it may be admitted on {version} now, "
                                f"with no cell here")
    return problems


def committed_gaps(baseline_file: Path, results: Path) -> list[str]:
    """``baseline_gaps`` of a committed baseline of the active family, against the newest
    whole run of its version in ``results`` and the family's checks as the code defines them
    now; the last line gives the fix when there is a gap."""
    from arib.checks.registry import load_checks

    baseline = read_results(baseline_file)
    version = baseline["sdk"]["version"]
    runs, _ = newest_whole_runs(results)
    stem = f"-{active_family().stem(version)}.json"
    newest = next((read_results(p) for p in runs if p.name.endswith(stem)), None)
    problems = baseline_gaps(baseline, newest, [c.to_json() for c in load_checks()])
    if problems:
        family = active_family().name
        command = f"{bench_command(version, family)} --accept"
        problems.append(f"fix: measure {family} {version} again and accept the run as its "
                        f"baseline (`{command}`), then commit results/baselines/")
    return problems
