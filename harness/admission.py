"""Admission: a check is admitted only when it holds on the reference and kills its mutants.

Per check, in forked children, ``reruns`` times each:
1. sanity gate "clean": the check holds on the clean reference backend in every rerun;
2. sanity gate "forced": the forced-broken reference mutant is violated;
3. the clean base of every paired mutant of a real backend is run too (as often as the
   mutants, at least 3 times): where it does not hold in every rerun on this SDK version, that
   mutant's kill would prove nothing, so it is reported as not judgeable here (status
   ``not_judgeable``, ``judgeable`` false, with the clean verdicts) and counts neither for
   nor against admission;
4. every judgeable paired mutant comes out as its expected verdict (``violated``, or for a
   claim mutant ``not_applicable`` / ``error``) in every rerun: ``killed``; and at least one
   hand-written and one generated mutant are killed on this version.
A gate failure raises GateError naming the gate; everything else is reported, never raised.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from checks.base import CheckSpec
from harness.cache import AdmissionCache
from harness.execute import (
    RunOptions,
    child_finding,
    derive_seed,
    fast_tmpdir,
    run_check,
    sdk_version,
)
from harness.ground.child import ChildOutcome, ChildStatus, run_jobs
from harness.ground.errors import GateError
from harness.ground.family import active_family
from harness.ground.model import (
    Admission,
    Cell,
    CleanBase,
    Finding,
    MutantKey,
    MutantKind,
    MutantResult,
    MutantStatus,
    Verdict,
    mutant_status,
)
from harness.keys import verdict_key
from harness.progress import Progress
from mutants.base import MutantSpec
from mutants.pool import schedule
from mutants.registry import forced_broken, get_mutant
from targets.base import TargetSpec
from targets.registry import get_target

GRACE_S = 15.0
# A mutant may take TIMEOUT_FACTOR times its clean run (at least MIN_MUTANT_TIMEOUT_S) before
# it is a timeout: a mutant that only slows the backend down must not cost a full minute.
TIMEOUT_FACTOR = 10.0
MIN_MUTANT_TIMEOUT_S = 1.0
# A mutant's child is killed this long after its time limit: a mutant can block the event
# loop's cancellation (a shielded write waiting on a lock it will never get).
MUTANT_GRACE_S = 1.0
# A mutant's limit leaves room for the backend's own longest wait (TargetSpec.waits_s, e.g.
# SQLite's busy timeout) plus the clean run plus this margin: a lock a mutant leaves held
# then makes the next caller give up with an error (evidence) instead of hanging past it.
WAIT_MARGIN_S = 2.0
# A check's clean base runs at least this often on a lane (admission's own rerun count): a
# base that breaks in 1 of 5 runs is seen with 3 runs about half the time, with 1 run 1 in 5.
MIN_CLEAN_RERUNS = 3
# The time-limit rule in words (recorded with survey results and in cache keys).
TIME_RULE = (f"per run: {TIMEOUT_FACTOR:g} x the clean run of the same check on the same lane, "
             f"at least {MIN_MUTANT_TIMEOUT_S:g} s, at most the check's timeout ({{cap}}); "
             f"never less than the lane's own lock wait (waits_s) + the clean run + "
             f"{WAIT_MARGIN_S:g} s")


@dataclass(frozen=True)
class AdmissionConfig:
    """How admission runs: reruns per mutant, parallel children, seed, cache, parameters."""

    reruns: int = 3
    workers: int = field(default_factory=lambda: os.cpu_count() or 1)
    run_seed: int = 0
    params: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    cache: AdmissionCache = field(default_factory=AdmissionCache)
    quiet: bool = False
    generated: bool = True
    # Service URLs (see harness.lanes.services_for_checks) for paired mutants of server lanes;
    # without one, such a mutant's clean base cannot be built and it is not judgeable.
    services: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class _Job:
    check: CheckSpec
    target: TargetSpec
    mutant: MutantSpec | None
    rerun: int
    role: str  # "clean", "forced", "base", "mutant"
    timeout_s: float | None = None  # a mutant's time limit, scaled from its clean run


def _options(check: CheckSpec, config: AdmissionConfig, rerun: int, early: bool,
             verify_claims: bool = True) -> RunOptions:
    return RunOptions(
        params=check.resolve_params(config.params.get(check.id)),
        run_seed=derive_seed(config.run_seed, "admission", rerun),
        stop_on_violation=early,
        tmpdir=fast_tmpdir(),
        verify_claims=verify_claims,
        services=config.services,
    )


def mutant_timeout(check: CheckSpec, clean_s: float, waits_s: float = 0.0) -> float:
    """A mutant's time limit: a multiple of the clean run, at most the check's own timeout,
    and never shorter than two of the backend's own waits ``waits_s`` plus the clean run plus a
    margin (a limit below SQLite's busy timeout turns "database is locked" into a hang)."""
    limit = min(check.timeout_s, max(MIN_MUTANT_TIMEOUT_S, TIMEOUT_FACTOR * clean_s))
    if waits_s > 0:
        # Room for two of the backend's waits: a mutant that leaves the store locked makes
        # one call wait out the busy timeout and often the next call of the trial too (a
        # single wait plus a 2 s margin was exceeded on a loaded machine: a kill seen as a
        # timeout, and admission flaky).
        limit = max(limit, 2 * waits_s + clean_s + WAIT_MARGIN_S)
    return limit


def clean_reruns(reruns: int) -> int:
    """How often a check's clean base runs on a lane: as often as its mutants, at least 3."""
    return max(MIN_CLEAN_RERUNS, reruns)


def clean_base(check_id: str, lane: str, findings: Sequence[Finding]) -> CleanBase:
    """The clean base of ``check_id`` on ``lane`` from its reruns' findings."""
    bad = next((f for f in findings if f.verdict is not Verdict.HELD), None)
    reason = None
    if bad is not None:
        reason = bad.reason or (bad.samples[0] if bad.samples else None)
        if bad.verdict is Verdict.VIOLATED and bad.violating_trials:
            reason = f"{bad.violating_trials}/{bad.trials} trials violated" + (
                f": {reason}" if reason else "")
    return CleanBase(check_id, lane, tuple(f.verdict for f in findings),
                     max((f.duration_s for f in findings), default=0.0),
                     reason[:300] if reason else None)


def run_status(check: CheckSpec, expected: Verdict, findings: Sequence[Finding]) -> MutantStatus:
    """A mutant's status from its reruns: a timeout is a kill only for a "does not hang" check."""
    timeouts = sum(1 for f in findings if f.modes.get("timeout"))
    return mutant_status([f.verdict for f in findings], expected, timeouts,
                         hang_kills=check.hang_invariant)


def _execute(job: _Job, config: AdmissionConfig) -> Finding:
    # A mutant's lane had its claims verified by the clean or base run of phase 1.
    opts = _options(job.check, config, job.rerun, early=job.role in ("forced", "mutant"),
                    verify_claims=job.role != "mutant")
    check = job.check
    if job.timeout_s is not None:
        check = dataclasses.replace(check, timeout_s=job.timeout_s)
    return run_check(check, job.target, opts, job.mutant)


def _as_finding(job: _Job, outcome: ChildOutcome, config: AdmissionConfig) -> Finding:
    opts = _options(job.check, config, job.rerun, early=False)
    return child_finding(job.check, job.target, opts, outcome,
                         job.timeout_s or job.check.timeout_s)


def _reference() -> TargetSpec:
    """The active family's reference target."""
    return active_family().resolve("reference")  # type: ignore[no-any-return]


def paired_mutants(check: CheckSpec, config: AdmissionConfig) -> tuple[list[MutantSpec],
                                                                        tuple[str, ...]]:
    """Hand-written mutants named by the check, then the generated ones it selects."""
    pairs = [get_mutant(name) for name in check.mutants]
    problems: tuple[str, ...] = ()
    if config.generated:
        from mutants.pool import generated_for_selectors

        generated, problems = generated_for_selectors(check.generated, sdk_version())
        pairs.extend(generated)
    return pairs, problems


def _slot(job: _Job) -> tuple[str, str, MutantKey | str]:
    """Where a job's finding is gathered: by check, role, and the mutant on its lane (a mutant
    id names a change to a module; lanes sharing the module share the id), else the lane."""
    return (job.check.id, job.role, job.mutant.key if job.mutant else job.target.name)


def _mutant_key(check: CheckSpec, mutant: MutantSpec, config: AdmissionConfig) -> str:
    return verdict_key("admission", check, mutant.target, mutant, reruns=config.reruns,
                       seed=config.run_seed,
                       params=check.resolve_params(config.params.get(check.id)),
                       limit=TIME_RULE)


def evidence(findings: Sequence[Finding]) -> str:
    """One line of evidence from the first finding of a mutant's reruns."""
    parts = []
    for f in findings[:1]:
        parts.append(f"verdict {f.verdict.value}")
        if f.violating_trials:
            parts.append(f"{f.violating_trials}/{f.trials} trials violated")
        if f.counts.total:
            parts.append(", ".join(f"{k} {v}" for k, v in f.counts.to_json().items() if v))
        if f.modes:
            parts.append("modes " + ", ".join(f"{k}={v}" for k, v in f.modes.items()))
        if f.reason:
            parts.append(f.reason)
        if f.samples:
            parts.append(f.samples[0])
    return "; ".join(parts)[:600]


def admit(checks: Sequence[CheckSpec], config: AdmissionConfig) -> tuple[Admission, ...]:
    """Admit each check or say why not; raises GateError when a sanity gate fails."""
    started = time.perf_counter()
    jobs: list[_Job] = []
    results_by_key: dict[tuple[str, MutantKey], MutantResult] = {}
    pairs: dict[str, list[MutantSpec]] = {}
    problems: dict[str, tuple[str, ...]] = {}
    forced = forced_broken()
    for check in checks:
        pairs[check.id], problems[check.id] = paired_mutants(check, config)
        for r in range(config.reruns):
            jobs.append(_Job(check, _reference(), None, r, "clean"))
        jobs.append(_Job(check, _reference(), forced, 0, "forced"))
        bases = sorted({m.target for m in pairs[check.id]} - {_reference().name})
        for name in bases:
            for r in range(clean_reruns(config.reruns)):
                jobs.append(_Job(check, get_target(name), None, r, "base"))
        for mutant in pairs[check.id]:
            if mutant.name in check.equivalent or mutant.id in check.equivalent:
                continue
            cached = config.cache.get(_mutant_key(check, mutant, config))
            if cached is not None:
                results_by_key[(check.id, mutant.key)] = cached
                continue
            for r in range(config.reruns):
                jobs.append(_Job(check, get_target(mutant.target), mutant, r, "mutant"))

    # Phase 1: the gates and the clean bases; their durations set the mutants' time limits.
    first = [j for j in jobs if j.role != "mutant"]
    second = [j for j in jobs if j.role == "mutant"]
    progress = Progress("admit", len(jobs), quiet=config.quiet)

    def runner(batch: list[_Job]) -> list[ChildOutcome]:
        def done(index: int, outcome: ChildOutcome) -> None:
            job = batch[index]
            what = job.mutant.name or job.mutant.qualname if job.mutant else job.target.name
            verdict = outcome.value.verdict.value if outcome.status is ChildStatus.OK else (
                outcome.status.value)
            progress.advance(f"{job.check.id} {job.role} {what}: {verdict}")

        return run_jobs(
            [functools.partial(_execute, job, config) for job in batch],
            workers=config.workers, on_done=done,
            timeout_s=[job.timeout_s + MUTANT_GRACE_S if job.timeout_s is not None
                       else job.check.timeout_s + GRACE_S for job in batch],
        )

    by_role: dict[tuple[str, str, MutantKey | str], list[Finding]] = {}
    clean_s: dict[Cell, float] = {}  # the longest clean run of a check on a lane
    for job, outcome in zip(first, runner(first), strict=True):
        finding = _as_finding(job, outcome, config)
        by_role.setdefault(_slot(job), []).append(finding)
        if job.role in ("clean", "base"):
            cell = Cell(job.check.id, job.target.name)
            clean_s[cell] = max(clean_s.get(cell, 0.0), finding.duration_s)
    second = schedule([dataclasses.replace(job, timeout_s=mutant_timeout(
        job.check, clean_s.get(Cell(job.check.id, job.target.name), job.check.timeout_s),
        job.target.waits_s)) for job in second], lambda job: job.mutant)
    for job, outcome in zip(second, runner(second), strict=True):
        by_role.setdefault(_slot(job), []).append(_as_finding(job, outcome, config))

    admissions = []
    for check in checks:
        clean = by_role[(check.id, "clean", _reference().name)]
        if clean and all(f.verdict is Verdict.NOT_APPLICABLE for f in clean):
            # The contract is not offered by this SDK version (verified on the runtime object,
            # e.g. compaction before the bounded-suffix protocol): nothing to admit or measure.
            admissions.append(Admission(
                check.id, False,
                (f"does not apply to {active_family().name} {sdk_version()}: the clean "
                 f"reference gave "
                 f"not_applicable ({evidence(clean[:1])})",),
                tuple(f.verdict for f in clean), (), time.perf_counter() - started))
            continue
        if any(f.verdict is not Verdict.HELD for f in clean):
            bad = next(f for f in clean if f.verdict is not Verdict.HELD)
            raise GateError(
                f"sanity gate 'clean reference holds' failed for {check.id}: the unmutated "
                f"reference backend gave {bad.verdict.value!r} ({evidence([bad])}); fix the "
                f"check or targets/reference.py before scoring anything"
            )
        forced_findings = by_role[(check.id, "forced", forced.key)]
        if any(f.verdict is not Verdict.VIOLATED for f in forced_findings):
            raise GateError(
                f"sanity gate 'forced-broken mutant is killed' failed for {check.id}: a "
                f"reference whose every operation raises gave "
                f"{forced_findings[0].verdict.value!r}; the check cannot fail, fix it"
            )
        results = []
        for mutant in pairs[check.id]:
            waiver = check.equivalent.get(mutant.name) or check.equivalent.get(mutant.id)
            if waiver:
                results.append(MutantResult(check.id, mutant.id, mutant.kind, mutant.target,
                                            mutant.description, MutantStatus.EQUIVALENT, (),
                                            mutant.expected, f"waived as equivalent: {waiver}",
                                            mutant.diff()))
                continue
            base = None if mutant.target == _reference().name else clean_base(
                check.id, mutant.target, by_role[(check.id, "base", mutant.target)])
            cached = results_by_key.get((check.id, mutant.key))
            findings = by_role.get((check.id, "mutant", mutant.key), [])
            if base is not None and not base.judgeable:
                # Judged by this run's clean base, whether the mutant's own result is cached.
                results.append(MutantResult(
                    check.id, mutant.id, mutant.kind, mutant.target, mutant.description,
                    MutantStatus.NOT_JUDGEABLE, tuple(f.verdict for f in findings),
                    mutant.expected,
                    f"not judgeable on {active_family().name} {sdk_version()}: the "
                    f"{base.describe()} "
                    f"without the mutant, so a kill would prove nothing", mutant.diff(),
                    sum(f.duration_s for f in findings), cached=cached is not None,
                    judgeable=False))
                continue
            if cached is not None:
                results.append(MutantResult(**{**cached.__dict__, "cached": True}))
                continue
            status = run_status(check, mutant.expected, findings)
            result = MutantResult(
                check.id, mutant.id, mutant.kind, mutant.target, mutant.description, status,
                tuple(f.verdict for f in findings), mutant.expected, evidence(findings),
                None if status is MutantStatus.KILLED else mutant.diff(),
                sum(f.duration_s for f in findings),
            )
            if status in (MutantStatus.KILLED, MutantStatus.SURVIVED):
                config.cache.put(_mutant_key(check, mutant, config), result)
            results.append(result)
        reasons = list(problems[check.id])
        kinds = {m.kind for m in pairs[check.id]}
        if MutantKind.HANDWRITTEN not in kinds:
            reasons.append("paired with no hand-written mutant")
        if config.generated and MutantKind.GENERATED not in kinds:
            reasons.append("paired with no generated mutant: add generated=(Selector(...),) "
                           "naming mutants it must kill (see `python -m harness survey`)")
        for res in results:
            if res.judgeable and res.status not in (MutantStatus.KILLED,
                                                    MutantStatus.EQUIVALENT):
                name = get_name(res.mutant_id, pairs[check.id])
                reasons.append(
                    f"mutant {name} ({res.mutant_id}) {res.status.value}: {res.evidence}")
        killed_kinds = {res.kind for res in results if res.status is MutantStatus.KILLED}
        for kind in (MutantKind.HANDWRITTEN, MutantKind.GENERATED):
            if kind in kinds and kind not in killed_kinds and (
                    kind is MutantKind.HANDWRITTEN or config.generated):
                reasons.append(f"no {kind.value} mutant is killed on {active_family().name} "
                               f"{sdk_version()} (the others are not judgeable or waived)")
        admissions.append(Admission(
            check.id, not reasons, tuple(reasons), tuple(f.verdict for f in clean),
            tuple(results), time.perf_counter() - started,
        ))
    return tuple(admissions)


def get_name(mutant_id: str, pool: Sequence[MutantSpec]) -> str:
    """The readable name of a mutant id within a pool."""
    for m in pool:
        if m.id == mutant_id:
            return m.name or m.id
    return mutant_id
