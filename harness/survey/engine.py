"""Survey: every check against every generated mutant of a lane's backend module.

The map of what the suite cannot see yet. Per lane:

1. the mutants are generated from the installed module (of a user's lane: the class its
   factory returns, ``arib.survey.user``); the compiler sorts out the
   equivalent and duplicate ones (``arib.mutants.equivalence``), and the lane's verified claims
   the ones that can never fire there (``not_applicable``): each lane's ``arib.survey.plan``;
2. each check's clean base runs ``max(3, reruns)`` times, each in a forked child that
   records which lines of the module it executes (``arib.survey.coverage``); a check that is
   not ``held`` in every rerun is not judgeable there;
3. each remaining mutant runs only under the judgeable checks that reach its lines, ``reruns``
   times each (``arib.judging.judge_mutants``, admission's pipeline too); a mutant no
   check reaches is ``no_coverage`` and is not run. The check that killed it last time (a
   hint kept beside the cache) runs first, then the checks that killed most of the lane's
   mutants, and the mutant stops at its first kill (``first_kill``; the other checks are
   ``not_run`` there). A pair's cache key names what the check's clean runs executed
   (``arib.caches.inputs``), so a pair whose inputs did not change is reused across SDK versions;
   a pair whose inputs cannot be named gets a key bound to the SDK's version;
4. statuses and scores follow ``arib.survey.scores``; the survivors file's ``equivalent``
   entries are applied, and every report lists the file's entries.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import shutil
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from arib.caches.clean import CleanCache, CleanEntry, Reuse
from arib.caches.keys import clean_key, mutant_source, verdict_key
from arib.caches.verdicts import AdmissionCache, cache_key
from arib.checks.base import CheckSpec
from arib.execute import (
    RUN_STALL_AFTER_SHARE,
    RunOptions,
    child_finding,
    derive_seed,
    fast_tmpdir,
    lane_claims,
)
from arib.ground import scratch
from arib.ground.child import ChildOutcome, ChildStatus, run_jobs
from arib.ground.keys import Cell, Pair
from arib.ground.model import Finding, MutantResult, MutantStatus, Verdict
from arib.judging import (
    KILL_RERUNS,
    TIME_RULE,
    Judged,
    Judging,
    PairJob,
    clean_base,
    clean_reruns,
    judge_mutants,
)
from arib.mutants.base import MutantSpec
from arib.mutants.operators import OPERATORS
from arib.progress import Progress
from arib.runs.shard import Split
from arib.survey.coverage import covered_run, read_record
from arib.survey.guards import executed_excluded, lane_guards
from arib.survey.lane import LaneSurvey, MutantOutcome
from arib.survey.plan import Plan, never_fires, not_applicable, prepare_lanes, shard_plans
from arib.survey.scores import lane_status
from arib.survey.survivors import Category, Entry, by_lane
from arib.targets.base import TargetSpec
from arib.warm import warm_all

# The version of the survey's rules and of its lane files (recorded in each file as "engine").
SURVEY_ENGINE = 2
S = MutantStatus
# The statuses of a (check, mutant) pair that the survey keeps in the cache.
CACHED = frozenset({S.KILLED, S.SURVIVED, S.TIMEOUT})


@dataclass(frozen=True)
class SurveyConfig:
    """What a survey runs: lanes, checks, reruns, parameters, time limit per run, waivers."""

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
    survivors: tuple[Entry, ...] = ()
    survivors_source: str | None = None  # the file the entries come from
    shard: Split | None = None  # run only this shard's (lane, mutant) units
    first_kill: bool = True  # stop a mutant at its first kill (False: every check reaching it)
    # a pair is killed only when it violated in this many reruns at least (arib.judging)
    kill_reruns: int = KILL_RERUNS

    def to_json(self) -> dict[str, Any]:
        """How the survey ran, as recorded next to its results."""
        return {
            "run_seed": self.run_seed,
            "reruns": self.reruns,
            "kill_reruns": max(self.reruns, self.kill_reruns),
            "clean_reruns": clean_reruns(self.reruns),
            "workers": self.workers,
            "params": {c: dict(p) for c, p in sorted(self.params.items())},
            "time_limit": TIME_RULE.format(cap=f"{self.timeout_s:g} s"),
            "stop_on_violation": True,
            "first_kill": self.first_kill,
            "tmpdir": "tmpfs (/dev/shm)" if self.tmpdir else "system default",
            "services": sorted(self.services),
            "survivors_file": self.survivors_source,
            **({"shard": self.shard.to_json()} if self.shard is not None else {}),
        }


def _key(check: CheckSpec, lane: TargetSpec, mutant: MutantSpec, config: SurveyConfig,
         inputs: Mapping[str, Any] | None) -> str:
    # The rule that sets time limits, not one run's limit (it follows the clean run's time).
    return verdict_key("survey", check, lane.name, mutant, reruns=config.reruns,
                       seed=config.run_seed,
                       params=check.resolve_params(config.params.get(check.id)),
                       limit=TIME_RULE.format(cap=f"{config.timeout_s:g} s"),
                       engine=SURVEY_ENGINE, waits=lane.waits_s, executed=inputs,
                       lane_spec=lane, kill_reruns=max(config.reruns, config.kill_reruns))


def _hint(lane: TargetSpec, mutant: MutantSpec) -> str:
    """Where the check that last killed ``mutant`` on ``lane`` is remembered."""
    return cache_key(kind="killer", lane=lane.name, mutant=mutant.id,
                     mutated=mutant_source(mutant))


def survey(config: SurveyConfig) -> tuple[LaneSurvey, ...]:
    """Run the survey; see the module docstring for its steps. When a re-judged sample of
    the verdict cache's hits disagrees with its entries, the store is discarded for the run
    and the survey runs again, judging everything (``arib.caches.verdicts``)."""
    surveys = _survey_once(config)
    if config.cache.disagreements and not config.cache.discarded:
        config.cache.discard()
        surveys = _survey_once(config)
    return surveys


def _survey_once(config: SurveyConfig) -> tuple[LaneSurvey, ...]:
    checks = tuple(dataclasses.replace(c, timeout_s=config.timeout_s) for c in config.checks)
    plans = [plan for lane in config.lanes
             for plan in prepare_lanes(lane, config.services, config.tmpdir)]
    if config.shard is not None:
        plans = shard_plans(plans, config.shard)

    def options(check: CheckSpec, rerun: int) -> RunOptions:  # of a clean run
        return RunOptions(params=check.resolve_params(config.params.get(check.id)),
                          run_seed=derive_seed(config.run_seed, "survey", rerun),
                          tmpdir=config.tmpdir, services=dict(config.services))

    # In the run's private folder: removed with it on every exit path (arib.ground.scratch).
    records = tempfile.mkdtemp(prefix="arib-coverage-", dir=scratch.folder())
    try:
        _clean_phase(config, checks, [p for p in plans if p.error is None], options, records)
    finally:
        shutil.rmtree(records, ignore_errors=True)
    runs = _mutant_phase(config, [p for p in plans if p.error is None])
    by = by_lane(config.survivors)
    return tuple(_assemble(plan, runs, by.get(plan.lane.name, {})) for plan in plans)


def _clean_phase(config: SurveyConfig, checks: Sequence[CheckSpec], plans: Sequence[Plan],
                 options: Any, records: str) -> None:
    """Clean bases with coverage (reused where what they executed is unchanged), and a
    claims probe where claims decide applicability."""
    kept = CleanCache(config.cache.root)
    keys: dict[Cell, str] = {}
    jobs: list[tuple[Plan, CheckSpec, int, str]] = []
    for plan in plans:
        for c in checks:
            keys[Cell(c.id, plan.lane.name)] = key = _clean_key(c, plan, config)
            entry, state = kept.lookup(key, c.id, plan.lane.name)
            plan.reuse[state] += 1
            if entry is not None:
                plan.clean[c.id] = dataclasses.replace(entry.base, reused=True)
                plan.coverage[c.id] = entry.lines
                plan.named[c.id] = entry.inputs
                continue
            for r in range(clean_reruns(config.reruns)):
                record = os.path.join(records, f"{plan.lane.name}.{c.id}.{r}.lines")
                jobs.append((plan, c, r, record))
    probes = [p for p in plans if never_fires(p.lane) and any(
        getattr(OPERATORS.get(m.operator), "requires_terminal_close", False) for m in p.mutants)]
    guarded = [p for p in plans if p.lane.fixed_guards]
    progress = Progress("survey clean", len(jobs) + len(probes) + len(guarded),
                        quiet=config.quiet)

    def done(index: int, outcome: ChildOutcome) -> None:
        what = (f"{jobs[index][0].lane.name} {jobs[index][1].id} clean" if index < len(jobs)
                else f"{probes[index - len(jobs)].lane.name} claims"
                if index < len(jobs) + len(probes)
                else f"{guarded[index - len(jobs) - len(probes)].lane.name} fixed guards")
        state = outcome.value.verdict.value if (
            outcome.status is ChildStatus.OK and isinstance(outcome.value, Finding)) else (
            outcome.status.value)
        progress.advance(f"{what}: {state}")

    calls: list[Callable[[], Any]] = [
        functools.partial(covered_run, c, plan.lane, options(c, r), record, plan.file)
        for plan, c, r, record in jobs]
    calls += [functools.partial(lane_claims, p.lane, dict(config.services), config.tmpdir)
              for p in probes]
    calls += [functools.partial(lane_guards, p.lane, dict(config.services), config.tmpdir)
              for p in guarded]
    limit = config.timeout_s * 3 + 10
    warm_all((c, plan.lane) for plan in plans for c in checks)
    outcomes = run_jobs(calls, workers=config.workers, timeout_s=limit, on_done=done,
                        stall_after_share=RUN_STALL_AFTER_SHARE)
    findings: dict[Cell, list[Finding]] = {}
    for (plan, c, r, record), out in zip(jobs, outcomes[:len(jobs)], strict=True):
        finding = child_finding(c, plan.lane, options(c, r), out, limit)
        findings.setdefault(Cell(c.id, plan.lane.name), []).append(finding)
        got = read_record(record, plan.file)
        if got.error is not None:
            plan.fail(f"coverage of {c.id} (clean rerun {r}) failed: {got.error}")
        elif not got.lines and finding.verdict is Verdict.HELD:
            plan.fail(f"coverage of {c.id} (clean rerun {r}) recorded no line of {plan.file} "
                      f"although the check held there: the recorder did not see the module")
        plan.coverage[c.id] = plan.coverage.get(c.id, frozenset()) | got.lines
        plan.executed.setdefault(c.id, []).append(got.executed)
    for plan in plans:
        for c in [c for c in checks if c.id not in plan.clean]:  # not reused: run now
            cell = Cell(c.id, plan.lane.name)
            base = plan.clean[c.id] = clean_base(c.id, plan.lane.name, findings[cell])
            inputs = plan.inputs(c.id) if plan.error is None else None
            if inputs is not None:  # named once: the verdict keys use them too
                plan.named[c.id] = inputs
            kept.settle(keys[cell], base, None if inputs is None else CleanEntry(
                base, plan.coverage[c.id], inputs))
    for plan, out in zip(probes, outcomes[len(jobs):len(jobs) + len(probes)], strict=True):
        verified = out.value if out.status is ChildStatus.OK else (
            f"claims probe {out.status.value}: {out.detail[:200]}")
        not_applicable(plan, verified)
    for plan, out in zip(guarded, outcomes[len(jobs) + len(probes):], strict=True):
        problem = out.value if out.status is ChildStatus.OK else (
            f"fixed-guards probe {out.status.value}: {out.detail[:200]}")
        problem = problem or executed_excluded(plan.excluded, plan.lane, plan.coverage)
        if problem:
            plan.fail(problem)


def _clean_key(check: CheckSpec, plan: Plan, config: SurveyConfig) -> str:
    # the options of a clean run (see ``options`` in ``survey``) and the lane's module
    return clean_key(check, plan.lane, module_digest=plan.module_digest,
                     reruns=clean_reruns(config.reruns), seed=config.run_seed,
                     params=check.resolve_params(config.params.get(check.id)),
                     limit=f"{config.timeout_s:g} s", engine=SURVEY_ENGINE,
                     waits=plan.lane.waits_s)


# A check's result on a mutant on a lane, by pair.
Runs = dict[Pair, MutantResult]


def _ordered(mutant: MutantSpec, checks: Sequence[CheckSpec],
             hints: Mapping[str, str | None], kills: Mapping[str, int]) -> list[CheckSpec]:
    """The checks to run on ``mutant``: its last killer first, then the checks that killed
    most of the lane's mutants last time, then by id. Never by measured time: the order
    decides which checks are ``not_run``, and the same run twice must say the same."""
    last = hints.get(mutant.id)
    return sorted(checks, key=lambda c: (c.id != last, -kills.get(c.id, 0), c.id))


def _mutant_phase(config: SurveyConfig, plans: Sequence[Plan]) -> Runs:
    """Run each mutant under the judgeable checks that reach it; cached pairs are reused."""
    by_id = {c.id: dataclasses.replace(c, timeout_s=config.timeout_s) for c in config.checks}
    pairs: dict[str, list[PairJob]] = {}
    bound: dict[str, int] = {}
    for plan in plans:
        judgeable = [by_id[c] for c, base in plan.clean.items() if base.judgeable]
        inputs = {c.id: plan.inputs(c.id) for c in judgeable}
        bound[plan.lane.name] = 0
        live = [m for m in plan.mutants if m.id not in plan.ignored]
        hints = {m.id: config.cache.killer(_hint(plan.lane, m)) for m in live}
        kills = {c: sum(1 for h in hints.values() if h == c) for c in by_id}
        pairs[plan.lane.name] = []
        for mutant in live:
            for c in _ordered(mutant, judgeable, hints, kills):
                if not plan.reaches(c.id, mutant):
                    continue
                bound[plan.lane.name] += inputs[c.id] is None
                pairs[plan.lane.name].append(PairJob(
                    c, plan.lane, mutant, Verdict.VIOLATED, plan.clean[c.id].duration_s,
                    _key(c, plan.lane, mutant, config, inputs[c.id])))
    judged = judge_mutants(
        [p for plan in plans for p in pairs[plan.lane.name]],
        Judging("survey", config.reruns, config.workers, config.cache, CACHED,
                config.run_seed, config.params, dict(config.services), config.tmpdir,
                wall_share=True, quiet=config.quiet, first_kill=config.first_kill,
                kill_reruns=config.kill_reruns))
    for plan in plans:
        for job in pairs[plan.lane.name]:
            result = judged.results.get(job.pair)
            if result is not None and result.status is S.KILLED:
                config.cache.remember_killer(_hint(plan.lane, job.mutant), job.check.id)
        plan.counts = _counts(plan, pairs[plan.lane.name], judged, config.reruns)
        plan.counts["keys_version_bound"] = bound[plan.lane.name]
        plan.counts["clean_changed"] = plan.reuse[Reuse.CHANGED]
        plan.counts["clean_unreadable"] = plan.reuse[Reuse.UNREADABLE]
        plan.counts["clean_unstable"] = plan.reuse[Reuse.UNSTABLE]
    return dict(judged.results)


def _counts(plan: Plan, jobs: Sequence[PairJob], judged: Judged, reruns: int
            ) -> dict[str, int]:
    """How many pair runs ran, came from the cache or were saved, and why; check executions."""
    judged_by = [c for c, base in plan.clean.items() if base.judgeable]
    pairs = [j.pair for j in jobs]
    cached = judged.cached(jobs)
    counts = {"run": sum(judged.executions.get(p, 0) for p in pairs),
              **judged.executions_by_role(pairs),
              "cached": cached,
              "cache_misses": sum(1 for p in pairs if p in judged.executions
                                  and p not in judged.unreadable),
              "cache_unreadable": sum(1 for p in pairs if p in judged.unreadable),
              "skipped_after_kill": sum(1 for p in pairs if p in judged.skipped) * reruns,
              "pairs": len(pairs),
              "mutants_judged": len({p.key for p in pairs}),
              "saved_by_coverage": 0, "saved_by_compiler_or_claims": 0, "not_judgeable": 0}
    for mutant in plan.mutants:
        if mutant.id in plan.ignored:
            counts["saved_by_compiler_or_claims"] += len(judged_by) * reruns
            continue
        counts["saved_by_coverage"] += reruns * sum(
            1 for c in judged_by if not plan.reaches(c, mutant))
        counts["not_judgeable"] += sum(
            1 for c, base in plan.clean.items() if not base.judgeable and not base.abstains
            and plan.reaches(c, mutant))
    return counts


def _pair_status(plan: Plan, check_id: str, mutant: MutantSpec, runs: Runs) -> MutantStatus:
    base = plan.clean[check_id]
    # a clean run that failed recorded no coverage worth reading: what its lines would have
    # reached is unknown, not "no coverage"
    if not base.judgeable and not base.abstains:
        return S.NOT_JUDGEABLE
    if not plan.reaches(check_id, mutant):
        return S.NO_COVERAGE
    if not base.judgeable:
        return S.NOT_JUDGEABLE
    found = runs.get(Pair(check_id, plan.key(mutant)))
    return S.NOT_RUN if found is None else found.status


def _assemble(plan: Plan, runs: Runs, waivers: Mapping[str, Entry]) -> LaneSurvey:
    """The lane's survey from its plan, the pairs that ran and the survivors file."""
    lane = plan.lane
    if plan.error is not None:
        outcomes = tuple(MutantOutcome(m, S.ERROR, f"lane not surveyed: {plan.error}", None,
                                       {}) for m in plan.mutants)
        return LaneSurvey(lane.name, lane.module, plan.file, outcomes,
                          plan.report.dropped_noncompiling if plan.report else 0,
                          plan.clean, {}, frozenset(), (), {}, plan.error,
                          tuple(waivers.values()), plan.order, plan.bad_input)
    applicable = [c for c, base in plan.clean.items() if not base.abstains]
    outcomes_by_id: dict[str, MutantOutcome] = {}
    for mutant in plan.mutants:
        lines = plan.mutant_lines.get(mutant.id)
        if mutant.id in plan.ignored:
            status, reason = plan.ignored[mutant.id]
            outcomes_by_id[mutant.id] = MutantOutcome(mutant, status, reason, lines, {})
            continue
        pairs = {c: _pair_status(plan, c, mutant, runs) for c in applicable}
        status = lane_status(pairs.values())
        killers = [c for c, s in pairs.items() if s is S.KILLED]
        flaky = [f"{c} in {runs[Pair(c, plan.key(mutant))].rate} reruns" for c, s in pairs.items()
                 if s is S.FLAKY]
        reason = (f"killed by {', '.join(killers)}" if killers else
                  "no applicable check executes its lines" if status is S.NO_COVERAGE else
                  f"flaky: violated in some reruns only ({', '.join(flaky)}), so not a kill"
                  if status is S.FLAKY else f"{status.value} under every check that reaches it")
        waiver = waivers.get(mutant.id)
        if waiver is not None and waiver.category is Category.EQUIVALENT and status is not (
                S.KILLED):
            status, reason = S.EQUIVALENT, f"waived as equivalent ({waiver.where} of the " \
                                           f"survivors file): {waiver.reason}"
        outcomes_by_id[mutant.id] = MutantOutcome(mutant, status, reason, lines, pairs, waiver)
    for mutant_id, dup in plan.duplicates.items():  # the representative's status is known now
        first = outcomes_by_id.get(dup.of or "")
        if first is not None:
            outcomes_by_id[mutant_id] = dataclasses.replace(
                outcomes_by_id[mutant_id], reason=f"{dup.reason} ({dup.of}: "
                                                  f"{first.status.value})")
    results = tuple(runs[Pair(c, plan.key(m))] for m in plan.mutants for c in applicable
                    if Pair(c, plan.key(m)) in runs)
    assert plan.lines is not None
    return LaneSurvey(lane.name, lane.module, plan.file,
                      tuple(outcomes_by_id[m.id] for m in plan.mutants),
                      plan.report.dropped_noncompiling if plan.report else 0, plan.clean,
                      plan.coverage, plan.lines.executable, results, plan.counts, None,
                      tuple(waivers.values()), plan.order)
