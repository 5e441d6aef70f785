"""Survey: every check against every generated mutant of a lane's backend module.

The map of what the suite cannot see yet: per lane and per check, how many generated mutants
are killed, and the diff of every mutant that no check kills. A check is surveyed on a lane
only where the clean backend holds it (a kill on an already broken backend means nothing).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from checks.base import CheckSpec
from harness.admission import MIN_MUTANT_TIMEOUT_S, MUTANT_GRACE_S, TIMEOUT_FACTOR, mutant_timeout
from harness.cache import AdmissionCache, cache_key, source_hash
from harness.child import ChildOutcome, ChildStatus, run_jobs
from harness.execute import (
    RunOptions,
    derive_seed,
    fast_tmpdir,
    python_version,
    run_check,
    sdk_version,
)
from harness.model import MutantResult, MutantStatus, Verdict, mutant_status
from harness.progress import Progress
from harness.results import atomic_write_text, environment, harness_commit
from mutants.base import MutantSpec
from mutants.pool import generated_for_lane, schedule
from targets.base import TargetSpec


@dataclass(frozen=True)
class SurveyConfig:
    """What a survey runs: lanes, checks, reruns, parameters, time limit per run."""

    lanes: tuple[TargetSpec, ...]
    checks: tuple[CheckSpec, ...]
    reruns: int = 1
    workers: int = field(default_factory=lambda: os.cpu_count() or 1)
    params: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    timeout_s: float = 10.0
    run_seed: int = 0
    cache: AdmissionCache = field(default_factory=AdmissionCache)
    quiet: bool = False
    tmpdir: str | None = field(default_factory=fast_tmpdir)
    services: Mapping[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """How the survey ran, as recorded next to its results."""
        return {
            "run_seed": self.run_seed,
            "reruns": self.reruns,
            "workers": self.workers,
            "params": {c: dict(p) for c, p in sorted(self.params.items())},
            "time_limit": TIME_RULE.format(cap=self.timeout_s),
            "stop_on_violation": True,
            "tmpdir": "tmpfs (/dev/shm)" if self.tmpdir else "system default",
            "services": sorted(self.services),
        }


TIME_RULE = (f"per run: {TIMEOUT_FACTOR:g} x the clean run of the same check on the same lane, "
             f"at least {MIN_MUTANT_TIMEOUT_S:g} s, at most {{cap:g}} s")


@dataclass(frozen=True)
class LaneSurvey:
    """The survey of one lane: each mutant's status under each applicable check."""

    lane: str
    module: str
    mutants: tuple[MutantSpec, ...]
    dropped_noncompiling: int
    skipped_checks: Mapping[str, str]
    results: tuple[MutantResult, ...]

    def killed_by(self, mutant_id: str) -> tuple[str, ...]:
        return tuple(r.check_id for r in self.results
                     if r.mutant_id == mutant_id and r.status is MutantStatus.KILLED)

    def score(self) -> float:
        """Share of generated mutants killed by at least one check."""
        if not self.mutants:
            return 0.0
        return sum(1 for m in self.mutants if self.killed_by(m.id)) / len(self.mutants)

    def check_scores(self) -> dict[str, tuple[int, int]]:
        """Per check: (killed, judged)."""
        out: dict[str, tuple[int, int]] = {}
        for r in self.results:
            killed, judged = out.get(r.check_id, (0, 0))
            out[r.check_id] = (killed + (r.status is MutantStatus.KILLED), judged + 1)
        return out

    def survivors(self) -> tuple[MutantSpec, ...]:
        return tuple(m for m in self.mutants if not self.killed_by(m.id))

    def to_json(self) -> dict[str, Any]:
        return {
            "lane": self.lane,
            "module": self.module,
            "mutants": len(self.mutants),
            "dropped_noncompiling": self.dropped_noncompiling,
            "score": round(self.score(), 4),
            "checks": {c: {"killed": k, "judged": j} for c, (k, j) in
                       sorted(self.check_scores().items())},
            "skipped_checks": dict(self.skipped_checks),
            "results": [r.to_json() for r in self.results],
            "survivors": [{**m.to_json(), "diff": m.diff()} for m in self.survivors()],
        }


def _run(check: CheckSpec, lane: TargetSpec, opts: RunOptions,
         mutant: MutantSpec | None) -> Any:
    return run_check(check, lane, opts, mutant)


def _key(check: CheckSpec, lane: TargetSpec, mutant: MutantSpec, config: SurveyConfig) -> str:
    return cache_key(
        kind="survey", lane=lane.name,
        check=source_hash(check.module, "checks.base", "checks.common"),
        mutant=mutant.id, source=mutant.source, python=python_version(), sdk=sdk_version(),
        reruns=config.reruns, params=check.resolve_params(config.params.get(check.id)),
        timeout=TIME_RULE.format(cap=config.timeout_s), harness=source_hash("harness.execute"),
    )


def survey(config: SurveyConfig) -> tuple[LaneSurvey, ...]:
    """Run the survey; each (check, mutant) is judged ``reruns`` times in forked children."""
    checks = tuple(dataclasses.replace(c, timeout_s=config.timeout_s) for c in config.checks)

    def options(check: CheckSpec, rerun: int, early: bool) -> RunOptions:
        return RunOptions(params=check.resolve_params(config.params.get(check.id)),
                          run_seed=derive_seed(config.run_seed, "survey", rerun),
                          stop_on_violation=early, tmpdir=config.tmpdir,
                          services=dict(config.services),
                          verify_claims=not early)  # mutants: verified on the clean base

    # Clean bases first: which checks apply to which lane.
    base_jobs = [(c, lane) for lane in config.lanes for c in checks]
    base_out = run_jobs(
        [functools.partial(_run, c, lane, options(c, 0, False), None) for c, lane in base_jobs],
        workers=config.workers, timeout_s=config.timeout_s * 3 + 10)
    applicable: dict[str, list[CheckSpec]] = {lane.name: [] for lane in config.lanes}
    skipped: dict[str, dict[str, str]] = {lane.name: {} for lane in config.lanes}
    limits: dict[tuple[str, str], float] = {}
    for (c, lane), out in zip(base_jobs, base_out, strict=True):
        verdict = out.value.verdict if out.status is ChildStatus.OK else Verdict.ERROR
        if verdict is Verdict.HELD:
            applicable[lane.name].append(c)
            limits[(c.id, lane.name)] = mutant_timeout(c, out.value.duration_s)
        else:
            skipped[lane.name][c.id] = f"clean backend gave {verdict.value}"

    jobs: list[tuple[CheckSpec, TargetSpec, MutantSpec, int]] = []
    # Keyed by lane too: lanes built on one module share its mutant ids.
    cached: dict[tuple[str, str, str], MutantResult] = {}
    reports = {lane.name: generated_for_lane(lane.name) for lane in config.lanes}
    for lane in config.lanes:
        for mutant in reports[lane.name].mutants:
            for c in applicable[lane.name]:
                hit = config.cache.get(_key(c, lane, mutant, config))
                if hit is not None:
                    cached[(lane.name, c.id, mutant.id)] = dataclasses.replace(hit, cached=True)
                    continue
                jobs += [(c, lane, mutant, r) for r in range(config.reruns)]
    jobs = schedule(jobs, lambda job: job[2])
    progress = Progress("survey", len(jobs), quiet=config.quiet)

    def done(index: int, outcome: ChildOutcome) -> None:
        c, lane, mutant, _ = jobs[index]
        state = outcome.value.verdict.value if outcome.status is ChildStatus.OK else (
            outcome.status.value)
        progress.advance(f"{lane.name} {mutant.operator} {mutant.qualname} x {c.id}: {state}")

    started = time.perf_counter()
    limit = [limits[(c.id, lane.name)] for c, lane, _, _ in jobs]
    outcomes = run_jobs(
        [functools.partial(_run, dataclasses.replace(c, timeout_s=t), lane, options(c, r, True), m)
         for (c, lane, m, r), t in zip(jobs, limit, strict=True)],
        workers=config.workers, timeout_s=[t + MUTANT_GRACE_S for t in limit], on_done=done)
    runs: dict[tuple[str, str, str], list[tuple[Verdict, bool, str]]] = {}
    for (c, lane, mutant, _r), out in zip(jobs, outcomes, strict=True):
        if out.status is ChildStatus.OK:
            f = out.value
            note = f.samples[0] if f.samples else (f.reason or "")
            runs.setdefault((lane.name, c.id, mutant.id), []).append((f.verdict, False, note))
        else:
            runs.setdefault((lane.name, c.id, mutant.id), []).append(
                (Verdict.ERROR, out.status is ChildStatus.TIMEOUT, out.detail[:200]))
    elapsed = time.perf_counter() - started

    surveys = []
    for lane in config.lanes:
        report = reports[lane.name]
        results = []
        for mutant in report.mutants:
            for c in applicable[lane.name]:
                if (lane.name, c.id, mutant.id) in cached:
                    results.append(cached[(lane.name, c.id, mutant.id)])
                    continue
                got = runs[(lane.name, c.id, mutant.id)]
                verdicts = [v for v, _, _ in got]
                status = mutant_status(verdicts, Verdict.VIOLATED,
                                       timeouts=sum(1 for _, t, _ in got if t))
                result = MutantResult(
                    c.id, mutant.id, mutant.kind, lane.name, mutant.description, status,
                    tuple(verdicts), Verdict.VIOLATED, got[0][2][:300] or None,
                    None if status is MutantStatus.KILLED else mutant.diff(),
                    elapsed / max(len(jobs), 1))
                if status in (MutantStatus.KILLED, MutantStatus.SURVIVED, MutantStatus.TIMEOUT):
                    config.cache.put(_key(c, lane, mutant, config), result)
                results.append(result)
        surveys.append(LaneSurvey(lane.name, report.module, report.mutants,
                                  report.dropped_noncompiling, skipped[lane.name],
                                  tuple(results)))
    return tuple(surveys)


def write_survey(surveys: Sequence[LaneSurvey], out_dir: Path,
                 config: SurveyConfig | None = None) -> list[Path]:
    """One JSON file per lane under ``out_dir``, written atomically."""
    paths = []
    run = {"harness_commit": harness_commit(), "environment": environment(),
           **(config.to_json() if config is not None else {})}
    for s in surveys:
        path = out_dir / f"{s.lane}.json"
        doc = {"kind": "arib-survey", "sdk": sdk_version(), "python": python_version(),
               "run": run, **s.to_json()}
        atomic_write_text(path, json.dumps(doc, indent=1, ensure_ascii=False) + "\n")
        paths.append(path)
    return paths


def survey_mutation_report(surveys: Sequence[LaneSurvey]) -> dict[str, Any]:
    """The survey's kill matrix in the mutation-testing-report-schema (version 2)."""
    from harness.mutation_report import to_mutation_report, validate_mutation_report

    mutants = {m.id: m for s in surveys for m in s.mutants}
    results = [r for s in surveys for r in s.results]
    report = to_mutation_report(results, mutants)
    validate_mutation_report(report)
    return report


def render_text(surveys: Sequence[LaneSurvey], show_diffs: int = 20) -> str:
    """The survey as text: score per lane and per check, then survivors with diffs."""
    lines = []
    for s in surveys:
        lines.append(f"{s.lane} ({s.module}): {len(s.mutants)} generated mutants "
                     f"({s.dropped_noncompiling} dropped: did not compile); mutation score "
                     f"{100 * s.score():.1f}%")
        for check_id, (killed, judged) in sorted(s.check_scores().items()):
            lines.append(f"  {check_id}: killed {killed}/{judged}")
        for check_id, why in sorted(s.skipped_checks.items()):
            lines.append(f"  {check_id}: not surveyed here ({why})")
        survivors = s.survivors()
        lines.append(f"  survivors: {len(survivors)}")
        for m in survivors[:show_diffs]:
            lines.append(f"  --- {m.id} {m.operator} in {m.qualname}")
            lines.extend("    " + line for line in m.diff().rstrip().splitlines())
        if len(survivors) > show_diffs:
            lines.append(f"  ... {len(survivors) - show_diffs} more survivors in the JSON")
    return "\n".join(lines)
