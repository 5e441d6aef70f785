"""Judging mutants: the one pipeline admission and the survey share.

Both ask the same question of many (check, mutant, lane) pairs: does the check see the
mutant there? Each caller runs its own clean phase (admission with its sanity gates, the
survey with coverage) and builds each cell's ``CleanBase`` with ``clean_base``; from there
``judge_mutants`` does the rest the same way for both:

1. a pair whose verdicts are in the cache (``arib.caches.keys.verdict_key``) is not run; an
   entry that fails to load is judged again and counted;
2. the others run ``reruns`` times each, in forked children, in ``arib.mutants.pool.schedule``
   order, each under a time limit scaled from its clean run (``mutant_timeout``); a pair whose
   every rerun violated runs again until it has ``kill_reruns`` (a kill must repeat);
3. a child that delivered no finding becomes an error finding (``child_finding``);
4. a pair's reruns become its status (``run_status``), and a settled status is cached.

With ``first_kill`` (the survey), the pairs of one mutant are judged in the order given (the
caller puts the check that killed it last time first) and stop at its first kill: a mutant's
pairs run in batches of 1, 2, 4, ... pairs, so that both cores stay busy while a mutant the
first check kills costs one execution. All mutants share one stream of children: a mutant's
next batch is queued as soon as its own runs are back, never behind another mutant's slowest
run (a barrier between waves left one core idle while a run waited out its time limit).

What differs between the callers is a field of ``Judging``, not a second copy.
"""

from __future__ import annotations

import dataclasses
import functools
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from arib.caches.verdicts import AdmissionCache, Lookup, proof_of
from arib.checks.base import CheckSpec
from arib.execute import (
    RUN_STALL_AFTER_SHARE,
    RunOptions,
    child_finding,
    derive_seed,
    run_check,
)
from arib.ground.child import ChildOutcome, ChildStatus, run_jobs
from arib.ground.keys import MutantKey, Pair
from arib.ground.model import CleanBase, Finding, MutantResult, MutantStatus, Verdict, mutant_status
from arib.mutants.base import MutantSpec
from arib.mutants.pool import schedule
from arib.progress import Progress
from arib.targets.base import TargetSpec
from arib.warm import warm_all

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
# Only a reproducible kill counts: where a pair's reruns all violated but fewer than this many
# ran (the survey's default is 1), it is rerun, each time with another seed, until it has this
# many; killed only when every one violated, else flaky with its rate. A race a rerun catches
# with probability p then passes for a kill with probability p**3, not p (a drop-lock mutant of
# SqliteSaver.cursor, caught in 0 to 2 of ARIB-LGCONC-001's 4 trials by seed, was "killed" by
# one lucky rerun). Admission runs 3 reruns of every pair already.
KILL_RERUNS = 3
# The time-limit rule in words (recorded with survey results and in cache keys).
TIME_RULE = (f"per run: {TIMEOUT_FACTOR:g} x the clean run of the same check on the same lane, "
             f"at least {MIN_MUTANT_TIMEOUT_S:g} s, at most the check's timeout ({{cap}}); "
             f"never less than the lane's own lock wait (waits_s) + the clean run + "
             f"{WAIT_MARGIN_S:g} s")


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
    timeouts = sum(1 for f in findings if f.timed_out)
    return mutant_status([f.verdict for f in findings], expected, timeouts,
                         hang_kills=check.hang_invariant)


def evidence(findings: Sequence[Finding]) -> str:
    """One line of evidence from the first finding of a mutant's reruns."""
    parts = []
    for f in findings[:1]:
        parts.append(f"verdict {f.verdict.value}")
        if f.timed_out:
            parts.append("timed out")
        if f.violating_trials:
            parts.append(f"{f.violating_trials}/{f.trials} trials violated")
        if f.counts.total:
            parts.append(", ".join(f"{k} {v}" for k, v in f.counts.labelled().items() if v))
        if f.modes:
            parts.append("modes " + ", ".join(f"{k}={v}" for k, v in f.modes.items()))
        if f.reason:
            parts.append(f.reason)
        if f.samples:
            parts.append(f.samples[0])
    return "; ".join(parts)[:600]


@dataclass(frozen=True)
class PairJob:
    """One check to judge on one mutant on one lane, and what its time limit follows."""

    check: CheckSpec  # its timeout_s caps the mutant's time limit
    lane: TargetSpec
    mutant: MutantSpec
    expected: Verdict  # the verdict a kill gives in every rerun
    clean_s: float  # the longest clean run of the check on the lane
    key: str  # its verdict cache key (arib.caches.keys.verdict_key)
    store: bool = True  # False: judged, never cached (e.g. its clean base was not run)

    @property
    def pair(self) -> Pair:
        """Where its result is found: its check on its mutant on its lane."""
        return Pair(self.check.id, MutantKey(self.lane.name, self.mutant.id))

    @property
    def limit_s(self) -> float:
        """Its time limit per run (see ``mutant_timeout``)."""
        return mutant_timeout(self.check, self.clean_s, self.lane.waits_s)


@dataclass(frozen=True)
class Judging:
    """How pairs are judged: their runs' seeds and options, and what is kept in the cache."""

    kind: str  # "admission" or "survey": run seeds derive from it, progress shows it
    reruns: int
    workers: int
    cache: AdmissionCache
    cache_statuses: frozenset[MutantStatus]  # the statuses settled enough to cache
    run_seed: int = 0
    params: Mapping[str, Mapping[str, int]] = dataclasses.field(default_factory=dict)
    services: Mapping[str, str] = dataclasses.field(default_factory=dict)
    tmpdir: str | None = None
    # A result's duration: the sum of its runs' own (False), or its runs' share of the
    # whole phase's wall time, children waiting for a worker included (True).
    wall_share: bool = False
    quiet: bool = False
    # Stop a mutant (its pairs on one lane, in the order given) at its first kill.
    first_kill: bool = False
    # How many reruns a kill must repeat in (KILL_RERUNS); 0: ``reruns`` (admission's own).
    kill_reruns: int = 0

    @property
    def confirm_to(self) -> int:
        """How many reruns a pair whose every rerun violated must reach to be killed."""
        return max(self.reruns, self.kill_reruns)

    def options(self, check: CheckSpec, rerun: int) -> RunOptions:
        """A mutant run's options: stop at the first violation; claims were verified clean."""
        return RunOptions(params=check.resolve_params(self.params.get(check.id)),
                          run_seed=derive_seed(self.run_seed, self.kind, rerun),
                          stop_on_violation=True, tmpdir=self.tmpdir, services=self.services,
                          verify_claims=False)


@dataclass(frozen=True)
class Judged:
    """Every judged pair's result by pair, cached ones marked ``cached``; the pairs not run
    because another check killed their mutant first; the cache entries that failed to load;
    how many check executions (child runs) it took."""

    results: Mapping[Pair, MutantResult]
    skipped: frozenset[Pair] = frozenset()
    unreadable: frozenset[Pair] = frozenset()
    executions: Mapping[Pair, int] = dataclasses.field(default_factory=dict)

    def cached(self, jobs: Sequence[PairJob]) -> int:
        """How many of ``jobs`` were answered from the cache."""
        return sum(1 for j in jobs if j.pair in self.results and self.results[j.pair].cached)

    def executions_by_role(self, pairs: Sequence[Pair]) -> dict[str, int]:
        """The check executions of ``pairs`` by what they did: on a mutant no check killed
        (every check that reaches it must run: the floor), a pair that killed, or a pair of a
        killed mutant that did not kill it (run before the kill, or beside it in its wave: all
        a perfect order of checks could have saved)."""
        killed = {p.key for p in pairs if p in self.results
                  and self.results[p].status is MutantStatus.KILLED}
        roles = {"executions_unkilled": 0, "executions_killing": 0, "executions_beside_kill": 0}
        for pair in pairs:
            n = self.executions.get(pair)  # None: cached, or not run after a kill
            if n is None:
                continue
            if pair.key not in killed:
                roles["executions_unkilled"] += n
            elif self.results[pair].status is MutantStatus.KILLED:
                roles["executions_killing"] += n
            else:
                roles["executions_beside_kill"] += n
        return roles


def _run(job: PairJob, rerun: int, how: Judging) -> Finding:
    check = dataclasses.replace(job.check, timeout_s=job.limit_s)
    return run_check(check, job.lane, how.options(job.check, rerun), job.mutant)


def _groups(jobs: Sequence[PairJob], first_kill: bool) -> list[list[PairJob]]:
    """The jobs of each mutant on its lane, in order (each job alone without first_kill)."""
    if not first_kill:
        return [[j] for j in jobs]
    groups: dict[MutantKey, list[PairJob]] = {}
    for job in jobs:
        groups.setdefault(job.pair.key, []).append(job)
    return list(groups.values())


@dataclass
class _Batches:
    """One mutant's pairs on its lane, judged a batch at a time (see ``judge_mutants``)."""

    remaining: list[PairJob]
    size: int = 1  # how many pairs the cache does not answer make its next batch
    now: list[PairJob] = dataclasses.field(default_factory=list)
    running: int = 0  # runs of ``now`` not back yet


def judge_mutants(pairs: Sequence[PairJob], how: Judging) -> Judged:
    """Each pair's ``MutantResult``: from the cache, or from ``how.reruns`` forked runs; with
    ``how.first_kill``, a mutant's pairs after its first kill are skipped (see the module).

    A mutant's batches follow each other as soon as its own runs are back, in one stream of
    children for every mutant: no run waits for another mutant's slowest run to end."""
    results: dict[Pair, MutantResult] = {}
    skipped: set[Pair] = set()
    unreadable: set[Pair] = set()
    executions: dict[Pair, int] = {}
    found: dict[Pair, dict[int, Finding]] = {}  # by rerun: the order they ran in varies
    verifying: dict[Pair, MutantStatus] = {}  # sampled hits judged again: their cached status
    progress = Progress(f"{how.kind} mutants", len(pairs) * how.reruns, quiet=how.quiet)
    started = time.perf_counter()
    runs = 0

    def goes_on(group: _Batches) -> bool:
        """After a batch: False once it killed the mutant (the rest is skipped) or none is
        left; else the next batch is twice as large."""
        if how.first_kill and any(results[p.pair].status is MutantStatus.KILLED
                                  for p in group.now):
            skipped.update(p.pair for p in group.remaining)
            progress.total -= how.reruns * len(group.remaining)
            group.remaining = []
        group.size *= 2
        return bool(group.remaining)

    def next_runs(group: _Batches) -> list[tuple[PairJob, int]]:
        """The runs of the group's next batch that the cache does not answer ([]: judged)."""
        while group.remaining:
            group.now = []
            while group.remaining and sum(1 for p in group.now
                                          if p.pair not in results) < group.size:
                job = group.remaining.pop(0)
                hit, state = how.cache.lookup(job.key, job.check.hang_invariant)
                if state in (Lookup.UNREADABLE, Lookup.CONTRADICTED):
                    unreadable.add(job.pair)
                if hit is not None and how.cache.sampled(job.key):
                    verifying[job.pair] = hit.status  # judged again, then compared
                    hit = None
                    if not job.store:  # no clean run timed it (the cache answered its cell):
                        job = dataclasses.replace(job, clean_s=job.check.timeout_s)
                group.now.append(job)
                if hit is not None:
                    results[job.pair] = dataclasses.replace(hit, cached=True)
                    progress.total -= how.reruns
                    if how.first_kill and hit.status is MutantStatus.KILLED:
                        break
            todo = [(p, r) for p in group.now if p.pair not in results
                    for r in range(how.reruns)]
            if todo:
                group.running = len(todo)
                return todo
            if not goes_on(group):
                break
        return []

    groups = [_Batches(list(g)) for g in _groups(pairs, how.first_kill)]
    jobs: list[tuple[PairJob, int, _Batches]] = []

    def queued(todo: list[tuple[PairJob, int, _Batches]]) -> list[tuple[Callable[[], Any], float]]:
        """Runs to fork, in ``schedule`` order (the ones that may hang first)."""
        warm_all((p.check, p.lane) for p, _, _ in todo)  # before schedule scans dependents
        ordered = schedule(todo, lambda j: j[0].mutant)
        jobs.extend(ordered)
        return [(functools.partial(_run, p, r, how), p.limit_s + MUTANT_GRACE_S)
                for p, r, _ in ordered]

    def confirmations(group: _Batches) -> list[tuple[PairJob, int]]:
        """The reruns that would confirm the kills of the group's batch (see KILL_RERUNS)."""
        todo = []
        for p in group.now:
            reruns = found.get(p.pair, {})
            if p.pair in results or not reruns or len(reruns) >= how.confirm_to:
                continue
            if run_status(p.check, p.expected, list(reruns.values())) is MutantStatus.KILLED:
                todo += [(p, r) for r in range(len(reruns), how.confirm_to)]
        return todo

    def done(index: int, outcome: ChildOutcome) -> Sequence[tuple[Callable[[], Any], float]]:
        nonlocal runs
        job, rerun, group = jobs[index]
        state = outcome.value.verdict.value if outcome.status is ChildStatus.OK else (
            outcome.status.value)
        m = job.mutant
        progress.advance(f"{job.lane.name} {m.name or f'{m.operator} {m.qualname}'} x "
                         f"{job.check.id}: {state}")
        found.setdefault(job.pair, {})[rerun] = _finding(job, rerun, outcome, how)
        runs += 1
        group.running -= 1
        if group.running:
            return []
        confirm = confirmations(group)
        if confirm:  # a kill counts once it repeated: its further reruns first
            progress.total += len(confirm)
            group.running = len(confirm)
            return queued([(p, r, group) for p, r in confirm])
        share = (time.perf_counter() - started) / runs  # this phase's so far, for the cache
        for p in group.now:
            if p.pair not in results:
                reruns = [f for _, f in sorted(found[p.pair].items())]
                results[p.pair] = _result(p, reruns, how, share)
                executions[p.pair] = len(reruns)
                if p.pair in verifying:
                    how.cache.checked(str(p.pair), verifying[p.pair], results[p.pair].status)
        return queued([(p, r, group) for p, r in next_runs(group)]) if goes_on(group) else []

    first = queued([(p, r, g) for g in groups for p, r in next_runs(g)])
    if first:
        run_jobs([job for job, _ in first], workers=how.workers,
                 timeout_s=[limit for _, limit in first], then=done,
                 stall_after_share=RUN_STALL_AFTER_SHARE)
    if how.wall_share and runs:  # each result's runs' share of the whole phase's wall time
        share = (time.perf_counter() - started) / runs
        for pair, n in executions.items():
            results[pair] = dataclasses.replace(results[pair], duration_s=share * n)
    progress.finish()
    return Judged(results, frozenset(skipped), frozenset(unreadable), executions)


def _finding(job: PairJob, rerun: int, outcome: ChildOutcome, how: Judging) -> Finding:
    """The finding of one run of a pair, or why its child delivered none."""
    return child_finding(job.check, job.lane, how.options(job.check, rerun), outcome,
                         job.limit_s)


def _result(job: PairJob, findings: Sequence[Finding], how: Judging, share: float
            ) -> MutantResult:
    """A pair's result from its reruns' findings, cached when its status is settled."""
    mutant = job.mutant
    status = run_status(job.check, job.expected, findings)
    result = MutantResult(
        job.check.id, mutant.id, mutant.kind, job.lane.name, mutant.description, status,
        tuple(f.verdict for f in findings), job.expected, evidence(findings) or None,
        None if status is MutantStatus.KILLED else mutant.diff(),
        share * len(findings) if how.wall_share else sum(f.duration_s for f in findings))
    if job.store and status in how.cache_statuses:
        how.cache.put(job.key, result, proof_of(findings), job.check.hang_invariant)
    return result
