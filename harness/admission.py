"""Admission: a check is admitted only when it holds on the reference and kills its mutants.

Per check, in forked children, ``reruns`` times each:
1. sanity gate "clean": the check holds on the clean reference backend in every rerun;
2. sanity gate "forced": the forced-broken reference mutant is violated;
3. the clean base of every paired mutant of a real backend is run too (as often as the
   mutants, at least 3 times): where it does not hold in every rerun on this SDK version, that
   mutant's kill would prove nothing, so it is reported as not judgeable here (status
   ``not_judgeable``, ``judgeable`` false, with the clean verdicts) and counts neither for
   nor against admission: such a mutant is not run. A lane whose every paired mutant of the
   check has a cached result does not run its clean base again (a result is cached only when
   its base held), nor does one whose base was violated in every rerun before under the same
   inputs (``arib.caches.bases``: kept, and re-run by the same seeded sample);
4. every judgeable paired mutant comes out as its expected verdict (``violated``, or for a
   claim mutant ``not_applicable`` / ``error``) in every rerun: ``killed``; and at least one
   hand-written and one generated mutant are killed on this version.
Steps 1-3 run first; the mutants are judged (``arib.judging.judge_mutants``, the survey's
pipeline too) only once both gates passed for every check. A gate failure raises GateError
naming the gate; everything else is reported, never raised.

Passed gates are cached like pair verdicts (``arib.caches.gates``): a check whose gates passed
before under a key naming every input they depend on (its sources, the reference's and the
forced mutant's, the versions, reruns, seed, parameters and time-limit rule) does not run them
again; that run's clean verdicts and duration stand in (reported as cached). A failed gate is
never cached. A seeded sample of those hits is run again, and a disagreement discards the
store for the run and admits everything again, as for pairs.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from arib.caches.bases import BaseCache, BasePlan
from arib.caches.gates import GateCache, GateEntry, GateStatus, gate_status
from arib.caches.keys import base_key, gate_key, verdict_key
from arib.caches.verdicts import AdmissionCache
from arib.checks.base import CheckSpec
from arib.execute import (
    RUN_STALL_AFTER_SHARE,
    RunOptions,
    child_finding,
    derive_seed,
    fast_tmpdir,
    run_check,
    sdk_version,
)
from arib.ground.child import ChildOutcome, ChildStatus, run_jobs
from arib.ground.errors import GateError
from arib.ground.family import active_family
from arib.ground.keys import Cell, MutantKey, Pair
from arib.ground.model import (
    Admission,
    CleanBase,
    Finding,
    MutantKind,
    MutantResult,
    MutantStatus,
    Verdict,
)
from arib.ground.package import checkout_name
from arib.judging import (
    TIME_RULE,
    Judged,
    Judging,
    PairJob,
    clean_base,
    clean_reruns,
    evidence,
    judge_mutants,
)
from arib.mutants.base import MutantSpec
from arib.mutants.registry import forced_broken, get_mutant
from arib.progress import Progress
from arib.targets.base import TargetSpec
from arib.targets.registry import get_target
from arib.warm import warm

# A gate's or a clean base's child is killed this long after the check's own timeout.
GRACE_S = 15.0
# The gates' time-limit rule in words (in their cache keys).
GATE_RULE = f"per gate run: the check's timeout + {GRACE_S:g} s"
# The statuses of a mutant that admission keeps in the cache (a flaky or timed-out mutant is
# judged again next time).
CACHED = frozenset({MutantStatus.KILLED, MutantStatus.SURVIVED})



def _reference(check: CheckSpec | None = None) -> TargetSpec:
    """The target whose clean runs gate ``check``: the one it names (``CheckSpec.reference``),
    else the active family's reference target."""
    if check is not None and check.reference:
        return get_target(check.reference)
    return active_family().resolve("reference")  # type: ignore[no-any-return]


def reference_file(check: CheckSpec) -> str:
    """The source file, as the checkout lays it out, of the reference that gates ``check``
    (``targets/langgraph/reference_store.py`` for a store check)."""
    return checkout_name(_reference(check).module).replace(".", "/") + ".py"


def _forced(check: CheckSpec) -> MutantSpec:
    """The forced-broken mutant of the target that gates ``check``."""
    return forced_broken(check.reference)

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
    # Service URLs (see arib.lanes.services_for_checks) for paired mutants of server lanes;
    # without one, such a mutant's clean base cannot be built and it is not judgeable.
    services: Mapping[str, str] = field(default_factory=dict)
    # Called once in the parent while the gates' last runs compute (the bench imports its
    # lanes' backends then: arib.warm).
    while_waiting: Callable[[], None] | None = None


@dataclass(frozen=True)
class _Job:
    check: CheckSpec
    target: TargetSpec
    mutant: MutantSpec | None
    rerun: int
    role: str  # "clean", "forced", "base"


def _options(check: CheckSpec, config: AdmissionConfig, rerun: int, early: bool
             ) -> RunOptions:
    """A gate's or a clean base's options (a mutant's: ``arib.judging.Judging``)."""
    return RunOptions(
        params=check.resolve_params(config.params.get(check.id)),
        run_seed=derive_seed(config.run_seed, "admission", rerun),
        stop_on_violation=early,
        tmpdir=fast_tmpdir(),
        services=config.services,
    )


def _execute(job: _Job, config: AdmissionConfig) -> Finding:
    opts = _options(job.check, config, job.rerun, early=job.role == "forced")
    return run_check(job.check, job.target, opts, job.mutant)


def _as_finding(job: _Job, outcome: ChildOutcome, config: AdmissionConfig) -> Finding:
    opts = _options(job.check, config, job.rerun, early=False)
    return child_finding(job.check, job.target, opts, outcome, job.check.timeout_s)


def paired_mutants(check: CheckSpec, config: AdmissionConfig) -> tuple[list[MutantSpec],
                                                                        tuple[str, ...]]:
    """Hand-written mutants named by the check, then the generated ones it selects."""
    pairs = [get_mutant(name) for name in check.mutants]
    problems: tuple[str, ...] = ()
    if config.generated:
        from arib.mutants.pool import generated_for_selectors

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


def _waiver(check: CheckSpec, mutant: MutantSpec) -> str | None:
    return check.equivalent.get(mutant.name) or check.equivalent.get(mutant.id)


Gathered = dict[tuple[str, str, MutantKey | str], list[Finding]]
# Each judged pair's cache key (computed once a run: a key hashes the check's sources and the
# whole mutated module).
Keys = dict[Pair, str]


def _keys(checks: Sequence[CheckSpec], pairs: Mapping[str, Sequence[MutantSpec]],
          config: AdmissionConfig) -> Keys:
    return {Pair(check.id, m.key): _mutant_key(check, m, config)
            for check in checks for m in pairs[check.id] if _waiver(check, m) is None}


@dataclass(frozen=True)
class _GatePlan:
    """Each check's gate key, the passed gates the cache answers for (not run), and the checks
    whose cached gates the sample runs again (their cached status, to compare)."""

    keys: Mapping[str, str]
    hits: Mapping[str, GateEntry]
    verifying: frozenset[str]


def _gate_plan(checks: Sequence[CheckSpec], config: AdmissionConfig, gates: GateCache
               ) -> _GatePlan:
    """Each check's gate key, and which passed gates the cache answers for."""
    keys: dict[str, str] = {}
    hits: dict[str, GateEntry] = {}
    verifying: set[str] = set()
    for check in checks:
        reference = _reference(check)
        keys[check.id] = gate_key(check, reference, _forced(check), reruns=config.reruns,
                                  seed=config.run_seed,
                                  params=check.resolve_params(config.params.get(check.id)),
                                  limit=GATE_RULE, runner=__name__)
        entry, _ = gates.lookup(keys[check.id], check.id, reference.name)
        if entry is not None and gates.sampled(keys[check.id]):
            verifying.add(check.id)  # run again, then compared with the entry
        elif entry is not None:
            hits[check.id] = entry
    return _GatePlan(keys, hits, frozenset(verifying))


def _settle_gates(checks: Sequence[CheckSpec], by_role: Gathered, bases: Mapping[Cell, CleanBase],
                  plan: _GatePlan, gates: GateCache) -> None:
    """After the gates ran: keep each check's that passed; compare each re-judged hit's
    outcome with its entry (a disagreement is recorded on the verdict cache)."""
    for check in checks:
        if check.id in plan.hits:
            continue
        clean = by_role[(check.id, "clean", _reference(check).name)]
        forced = by_role[(check.id, "forced", _forced(check).key)]
        status = gate_status([f.verdict for f in clean], [f.verdict for f in forced])
        if check.id in plan.verifying:
            gates.verdicts.checked(f"sanity gates of {check.id}", GateStatus.PASSED, status)
        if status is GateStatus.PASSED:
            gates.write(plan.keys[check.id], GateEntry.of(
                bases[Cell(check.id, _reference(check).name)], clean, forced))


def _clean_phase(checks: Sequence[CheckSpec], pairs: Mapping[str, Sequence[MutantSpec]],
                 keys: Keys, plan: _GatePlan, config: AdmissionConfig
                 ) -> tuple[Gathered, dict[Cell, CleanBase]]:
    """The gates (but the cached ones) and the clean bases, by role; and each cell's clean
    base, which sets its mutants' time limits and says whether they can be judged there."""
    jobs: list[_Job] = []
    skipped = _cached_cells(checks, pairs, keys, config)
    kept = _base_plan(checks, pairs, skipped, config)
    for check in checks:
        if check.id not in plan.hits:  # a hit passed before under the same inputs: not run
            for r in range(config.reruns):
                jobs.append(_Job(check, _reference(check), None, r, "clean"))
            jobs.append(_Job(check, _reference(check), _forced(check), 0, "forced"))
        for name in _base_lanes(check, pairs):
            if Cell(check.id, name) in skipped or Cell(check.id, name) in kept.hits:
                continue
            for r in range(clean_reruns(config.reruns)):
                jobs.append(_Job(check, get_target(name), None, r, "base"))
    if plan.hits and not config.quiet:
        print(f"[admit] sanity gates of {len(plan.hits)} of {len(checks)} checks cached (not "
              f"run: passed before under the same inputs); {len(plan.verifying)} cached run "
              f"again as the re-judged sample", file=sys.stderr)
    if kept.hits and not config.quiet:
        print(f"[admit] clean bases of {len(kept.hits)} cell(s) kept as violated in every "
              f"rerun (not run: their mutants are not judgeable there under the same inputs); "
              f"{len(kept.verifying)} kept run again as the re-judged sample", file=sys.stderr)
    progress = Progress("admit", len(jobs), quiet=config.quiet)

    def done(index: int, outcome: ChildOutcome) -> None:
        job = jobs[index]
        what = job.mutant.name or job.mutant.qualname if job.mutant else job.target.name
        verdict = outcome.value.verdict.value if outcome.status is ChildStatus.OK else (
            outcome.status.value)
        progress.advance(f"{job.check.id} {job.role} {what}: {verdict}")

    outcomes = run_jobs([functools.partial(_execute, job, config) for job in jobs],
                        workers=config.workers, on_done=done,
                        timeout_s=[job.check.timeout_s + GRACE_S for job in jobs],
                        stall_after_share=RUN_STALL_AFTER_SHARE,
                        before_fork=lambda i: warm(jobs[i].check, jobs[i].target),
                        while_waiting=config.while_waiting)
    by_role: Gathered = {}
    for job, outcome in zip(jobs, outcomes, strict=True):
        by_role.setdefault(_slot(job), []).append(_as_finding(job, outcome, config))
    bases = {Cell(job.check.id, job.target.name): clean_base(
        job.check.id, job.target.name, by_role[_slot(job)])
        for job in jobs if job.role in ("clean", "base")}
    for cell, key in kept.keys.items():
        if cell not in kept.hits:  # ran now: compared with the sampled hit, kept if violated
            kept.store.settle(key, bases[cell], by_role[(cell.check_id, "base", cell.lane)],
                              kept.verifying.get(cell))
    bases.update({cell: dataclasses.replace(entry.base, reused=True)
                  for cell, entry in kept.hits.items()})
    bases.update({cell: CleanBase(cell.check_id, cell.lane, (), 0.0, cached=True)
                  for cell in skipped})
    bases.update({Cell(check_id, entry.base.lane): dataclasses.replace(entry.base, reused=True)
                  for check_id, entry in plan.hits.items()})
    return by_role, bases


def _base_lanes(check: CheckSpec, pairs: Mapping[str, Sequence[MutantSpec]]) -> list[str]:
    """The lanes, but the gates', whose clean base ``check``'s paired mutants need."""
    return sorted({m.target for m in pairs[check.id]} - {_reference(check).name})


def _base_plan(checks: Sequence[CheckSpec], pairs: Mapping[str, Sequence[MutantSpec]],
               skipped: set[Cell], config: AdmissionConfig) -> BasePlan:
    """Which clean bases the store of violated ones answers for (``arib.caches.bases``): a
    key for each cell to run but on a lane that needs a server."""
    keys = {Cell(check.id, name): base_key(
        check, get_target(name), reruns=clean_reruns(config.reruns), seed=config.run_seed,
        params=check.resolve_params(config.params.get(check.id)), limit=GATE_RULE,
        runner=__name__)
        for check in checks for name in _base_lanes(check, pairs)
        if Cell(check.id, name) not in skipped and get_target(name).service is None}
    return BasePlan.of(BaseCache(config.cache), keys)


def _cached_cells(checks: Sequence[CheckSpec], pairs: Mapping[str, Sequence[MutantSpec]],
                  keys: Keys, config: AdmissionConfig) -> set[Cell]:
    """The cells (check, lane other than the gate's) whose clean base need not run: each of
    their paired mutants is waived or has a cached result, and a result was cached only when
    its clean base held under the inputs its key names. The gates' lane is not one of them:
    its base is the clean gate, run unless its passed outcome is cached (``_gate_plan``)."""
    cells: set[Cell] = set()
    for check in checks:
        gate = _reference(check).name  # its base is the clean gate (cached in arib.caches.gates)
        by_lane: dict[str, list[str]] = {}
        for mutant in pairs[check.id]:
            key = keys.get(Pair(check.id, mutant.key))  # none: waived
            if mutant.target != gate and key is not None:
                by_lane.setdefault(mutant.target, []).append(key)
        cells.update(Cell(check.id, lane) for lane, lane_keys in by_lane.items()
                     if all(config.cache.holds(key) for key in lane_keys))
    return cells


def _gates(check: CheckSpec, by_role: Gathered, plan: _GatePlan, started: float
           ) -> Admission | None:
    """Raise GateError when a sanity gate fails; the check's admission when it does not
    apply to this SDK version, else None (the gates passed, now or cached). Judged by
    ``gate_status``, as the gate cache keeps them."""
    if check.id in plan.hits:
        return None
    clean = by_role[(check.id, "clean", _reference(check).name)]
    forced = by_role[(check.id, "forced", _forced(check).key)]
    status = gate_status([f.verdict for f in clean], [f.verdict for f in forced])
    if status is GateStatus.PASSED:
        return None
    if status is GateStatus.NOT_APPLICABLE:
        # The contract is not offered by this SDK version (verified on the runtime object,
        # e.g. compaction before the bounded-suffix protocol): nothing to admit or measure.
        return Admission(
            check.id, False,
            (f"does not apply to {active_family().name} {sdk_version()}: the clean "
             f"reference gave "
             f"not_applicable ({evidence(clean[:1])})",),
            tuple(f.verdict for f in clean), (), time.perf_counter() - started)
    bad = next((f for f in clean if f.verdict is not Verdict.HELD), None)
    if bad is not None or not clean:
        raise GateError(
            f"sanity gate 'clean reference holds' failed for {check.id}: the unmutated "
            f"reference backend gave "
            + (f"{bad.verdict.value!r} ({evidence([bad])})" if bad is not None
               else "no verdict (no clean run)")
            + f"; fix the check or the reference lane {_reference(check).name!r} "
              f"({reference_file(check)}) before scoring anything"
        )
    missed = next((f for f in forced if f.verdict is not Verdict.VIOLATED), None)
    raise GateError(
        f"sanity gate 'forced-broken mutant is killed' failed for {check.id}: a "
        f"reference whose every operation raises gave "
        + (f"{missed.verdict.value!r}" if missed is not None else "no verdict (no forced run)")
        + "; the check cannot fail, fix it"
    )


def _pairs(check: CheckSpec, mutants: Sequence[MutantSpec], bases: Mapping[Cell, CleanBase],
           keys: Keys) -> list[PairJob]:
    """The check's paired mutants to judge: all but the waived ones and those whose clean
    base does not hold on their lane (a kill there would prove nothing, and a not judgeable
    mutant counts neither for nor against admission: it is not run)."""
    pairs = []
    for mutant in mutants:
        base = bases[Cell(check.id, mutant.target)]
        if _waiver(check, mutant) is None and base.judgeable:
            pairs.append(PairJob(check, get_target(mutant.target), mutant, mutant.expected,
                                 base.duration_s, keys[Pair(check.id, mutant.key)],
                                 store=not base.cached))
    return pairs


def admit(checks: Sequence[CheckSpec], config: AdmissionConfig) -> tuple[Admission, ...]:
    """Admit each check or say why not; raises GateError when a sanity gate fails. When a
    re-judged sample of the verdict cache's hits disagrees with its entries, the store is
    discarded for the run and every check is admitted again from nothing (arib.caches.verdicts)."""
    gates = GateCache(config.cache)
    admissions = _admit_once(checks, config, gates)
    if config.cache.disagreements and not config.cache.discarded:
        config.cache.discard()
        admissions = _admit_once(checks, config, gates)
    return admissions


def _admit_once(checks: Sequence[CheckSpec], config: AdmissionConfig, gates: GateCache
                ) -> tuple[Admission, ...]:
    started = time.perf_counter()
    pairs: dict[str, list[MutantSpec]] = {}
    problems: dict[str, tuple[str, ...]] = {}
    for check in checks:
        pairs[check.id], problems[check.id] = paired_mutants(check, config)
    # Phase 1: the gates and the clean bases; their durations set the mutants' time limits.
    keys = _keys(checks, pairs, config)
    plan = _gate_plan(checks, config, gates)
    by_role, bases = _clean_phase(checks, pairs, keys, plan, config)
    _settle_gates(checks, by_role, bases, plan, gates)
    if config.cache.disagreements and not config.cache.discarded:
        return ()  # a re-judged cached gate disagreed: admit() discards, admits all again
    moot = {check.id: _gates(check, by_role, plan, started) for check in checks}
    judged = judge_mutants(
        [p for c in checks if moot[c.id] is None for p in _pairs(c, pairs[c.id], bases, keys)],
        Judging("admission", config.reruns, config.workers, config.cache, CACHED,
                config.run_seed, config.params, config.services, fast_tmpdir(),
                quiet=config.quiet))
    admissions = []
    for check in checks:
        moot_check = moot[check.id]
        if moot_check is not None:
            admissions.append(moot_check)
            continue
        results = [_result(check, mutant, bases, judged) for mutant in pairs[check.id]]
        reasons = _reasons(check, pairs[check.id], problems[check.id], results, config)
        hit = plan.hits.get(check.id)
        admissions.append(Admission(
            check.id, not reasons, tuple(reasons),
            hit.base.verdicts if hit else tuple(
                f.verdict for f in by_role[(check.id, "clean", _reference(check).name)]),
            tuple(results), time.perf_counter() - started, gates_cached=hit is not None,
        ))
    return tuple(admissions)


def _result(check: CheckSpec, mutant: MutantSpec, bases: Mapping[Cell, CleanBase],
            judged: Judged) -> MutantResult:
    """A paired mutant's result: waived, not judgeable on this version, or as judged."""
    waiver = _waiver(check, mutant)
    if waiver:
        return MutantResult(check.id, mutant.id, mutant.kind, mutant.target,
                            mutant.description, MutantStatus.EQUIVALENT, (), mutant.expected,
                            f"waived as equivalent: {waiver}", mutant.diff())
    base = bases[Cell(check.id, mutant.target)]
    if base.judgeable:  # the gate lane's base is its clean gate, which held
        return judged.results[Pair(check.id, mutant.key)]
    # Judged by this run's clean base alone: the mutant is not run.
    return MutantResult(
        check.id, mutant.id, mutant.kind, mutant.target, mutant.description,
        MutantStatus.NOT_JUDGEABLE, (), mutant.expected,
        f"not judgeable on {active_family().name} {sdk_version()}: the "
        f"{base.describe()} "
        f"without the mutant, so a kill would prove nothing (the mutant is not run)",
        mutant.diff(), 0.0, judgeable=False)


def _reasons(check: CheckSpec, mutants: Sequence[MutantSpec], problems: Sequence[str],
             results: Sequence[MutantResult], config: AdmissionConfig) -> list[str]:
    """Why the check is not admitted (none: admitted)."""
    reasons = list(problems)
    kinds = {m.kind for m in mutants}
    if MutantKind.HANDWRITTEN not in kinds:
        reasons.append("paired with no hand-written mutant")
    if config.generated and MutantKind.GENERATED not in kinds:
        reasons.append("paired with no generated mutant: add generated=(Selector(...),) "
                       "naming mutants it must kill (see `python -m arib survey`)")
    for res in results:
        if res.judgeable and res.status not in (MutantStatus.KILLED, MutantStatus.EQUIVALENT):
            name = get_name(res.mutant_id, mutants)
            reasons.append(f"mutant {name} ({res.mutant_id}) {res.status.value}: {res.evidence}")
    killed_kinds = {res.kind for res in results if res.status is MutantStatus.KILLED}
    for kind in (MutantKind.HANDWRITTEN, MutantKind.GENERATED):
        if kind in kinds and kind not in killed_kinds and (
                kind is MutantKind.HANDWRITTEN or config.generated):
            reasons.append(f"no {kind.value} mutant is killed on {active_family().name} "
                           f"{sdk_version()} (the others are not judgeable or waived)")
    return reasons


def get_name(mutant_id: str, pool: Sequence[MutantSpec]) -> str:
    """The readable name of a mutant id within a pool."""
    for m in pool:
        if m.id == mutant_id:
            return m.name or m.id
    return mutant_id
