"""Runs one check on one target, in this process, and turns what happened into a Finding.

Meant to be called inside a child process (see arib.ground.child): a mutant is installed first,
then every trial runs on a fresh temporary root with its own seed. An exception escaping a
check body, a target that cannot be built, a false claim or a timeout becomes an ``error``
finding with its traceback; nothing here raises because of a backend.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import inspect
import platform
import shlex
import shutil
import sys
import tempfile
import time
import traceback
import warnings
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from arib.blame import MODE as BLAME_MODE
from arib.blame import backend_raised, check_folder
from arib.checks.base import CheckSpec, NotApplicable, TrialContext, describe
from arib.ground import scratch
from arib.ground.child import ChildOutcome, ChildStatus, Watchdog, finish_early, in_child
from arib.ground.family import active_family
from arib.ground.model import Counts, Finding, Loop, Trial, Verdict
from arib.ground.schedule import Schedule, ScheduleError, Scheduler, TrialPlanner, activated
from arib.mutants.base import MutantSpec
from arib.targets.base import BuildContext, TargetSpec, verify_claims, verify_close_scope

SWITCH_INTERVAL_S = 1e-5
# A trial still running this long after its timeout did not respond to cancellation (a worker
# thread blocked on a lock); in a child, a watchdog then reports the timeout itself.
WATCHDOG_SLACK_S = 0.1
# A run of a check, clean or on a mutant (a bench cell, an admission gate or clean base, a
# survey's clean rerun, a mutant's run), is mostly short against its time limit, and many
# wait: for the next clock second (COMPACT-004, POP-001), a fault's settle time (NET-001), a
# server's reply, a lock a mutant left held. Such a child, once it used no CPU over a sampling
# window and has no runnable thread, from its first STALL_AFTER_S on, leaves its core to the
# next run (``run_jobs``' stall_after_share 0) instead of after a tenth of its limit; it takes
# a core again as soon as it computes. Measured side by side on 2026-12-05: the same verdicts,
# statuses and judgeability as with a tenth, in less time (mutants/README.md, "How mutants
# are run").
RUN_STALL_AFTER_SHARE = 0.0


def sdk_version() -> str:
    """The installed version of the active family's distribution (for openai-agents, the
    SDK's version), read once per distribution: parsing metadata is slow."""
    return active_family().version()


def python_version() -> str:
    """This interpreter's version, e.g. '3.12.1'."""
    return platform.python_version()


def fast_tmpdir() -> str | None:
    """A tmpfs folder for admission and survey runs, where SQLite's fsync costs nothing.

    A check with ``on_disk`` (the durability checks) works on the default temporary folder
    (a real disk) there too, as the bench does for every check. Only the base:
    ``run_check`` works in this run's private folder under it (arib.ground.scratch).
    """
    return scratch.fast_base()


def derive_seed(run_seed: int, *parts: object) -> int:
    """A trial seed from the run seed and the trial's coordinates (stable across runs)."""
    text = "\x1f".join([str(run_seed), *map(str, parts)])
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big") >> 1


@dataclass(frozen=True)
class RunOptions:
    """How to run a check: its parameters, the run seed, the event loop, explicit seeds."""

    params: Mapping[str, int]
    run_seed: int = 0
    loop: str = "asyncio"
    trial_seeds: tuple[int, ...] | None = None
    stop_on_violation: bool = False
    services: Mapping[str, str] = field(default_factory=dict)
    tmpdir: str | None = None
    # False when the lane's claims were already verified on its clean backend in this run:
    # a mutant of the backend's code changes what it does, not what the adapter claims.
    # Claim mutants (MutantSpec.claims) are always verified.
    verify_claims: bool = True
    # A recorded schedule to replay (with one trial seed): the run follows its decisions.
    schedule: Schedule | None = None
    # The index of the first trial (a replay of trial 3 runs as trial 3: a check may choose
    # its mode by index, e.g. tasks on even trials and threads on odd ones).
    first_index: int = 0

    def seeds(self, check: CheckSpec, target: TargetSpec) -> tuple[int, ...]:
        """The trial seeds: the explicit ones, else one derived per trial from the run seed."""
        if self.trial_seeds is not None:
            return self.trial_seeds
        n = int(self.params[check.trials_param])
        return tuple(derive_seed(self.run_seed, check.id, target.name, i) for i in range(n))


def replay_command(
    check: CheckSpec, target: TargetSpec, seed: int, opts: RunOptions, mutant: MutantSpec | None,
    schedule: str | None = None, index: int = 0,
) -> str:
    """The command that reruns exactly one trial with this seed (as trial ``index``, and
    with this schedule); a mutant is found again through the ``--mutants`` files it may
    come from."""
    from arib.ground.extensions import mutant_paths

    files = [w for path in (mutant_paths() if mutant is not None else ())
             for w in ("--mutants", str(path))]
    words = ["python", "-m", "arib", *files, "run", "--check", check.id, "--lane",
             target.named_by or target.name, "--trial-seed", str(seed)]
    if index:
        words += ["--trial-index", str(index)]
    if schedule is not None:
        words += ["--schedule", schedule]
    for name, value in sorted(opts.params.items()):
        if name != check.trials_param:
            words += ["--param", f"{check.id}.{name}={value}"]
    if opts.loop != "asyncio":
        words += ["--loop", opts.loop]
    if mutant is not None:
        words += ["--mutant", mutant.name or mutant.id]
    return shlex.join(words)


def _base_finding(check: CheckSpec, target: TargetSpec, opts: RunOptions,
                  seeds: Sequence[int]) -> dict[str, Any]:
    return {
        "invariant_id": check.id,
        "invariant": check.invariant,
        "fault": check.fault,
        "target": target.name,
        "sdk_version": sdk_version(),
        "python_version": python_version(),
        "params": {**dict(opts.params), "loop": opts.loop, "run_seed": opts.run_seed},
        "seeds": tuple(seeds),
    }


def error_finding(check: CheckSpec, target: TargetSpec, opts: RunOptions, reason: str,
                  tb: str | None = None, duration_s: float = 0.0,
                  seeds: Sequence[int] = (), *, timed_out: bool = False) -> Finding:
    """A finding for when the harness could not judge; names the reason (``timed_out``: the
    run ended at its time limit)."""
    return Finding(**_base_finding(check, target, opts, seeds), verdict=Verdict.ERROR,
                   trials=0, violating_trials=0, counts=Counts(), duration_s=duration_s,
                   reason=reason, traceback=tb, timed_out=timed_out)


def child_finding(check: CheckSpec, target: TargetSpec, opts: RunOptions,
                  outcome: ChildOutcome, limit_s: float, *, lane_child: bool = False) -> Finding:
    """The finding a child delivered, or an error finding saying why it delivered none.

    The one way a failed child (``ChildStatus`` timeout, crash or raised) becomes a result,
    for admission, the survey and the bench; its detail is the traceback. The reason names
    the status; a child killed at its hard time limit ``limit_s`` timed out (``timed_out``).
    ``lane_child`` keeps the bench's own wording, ``lane child <status>: <detail>`` (300
    characters of it), as its result files have it.
    """
    if outcome.status is ChildStatus.OK:
        return outcome.value  # type: ignore[no-any-return]
    if lane_child:
        reason = f"lane child {outcome.status.value}: {outcome.detail[:300]}"
    else:
        reason = {
            ChildStatus.TIMEOUT: f"child killed at its hard time limit ({limit_s:.1f}s + grace)",
            ChildStatus.CRASH: f"child crashed: {outcome.detail}",
            ChildStatus.RAISED: "child raised out of the harness",
        }[outcome.status]
    return error_finding(check, target, opts, reason, outcome.detail or None,
                         outcome.duration_s, timed_out=outcome.status is ChildStatus.TIMEOUT)


def summarize(check: CheckSpec, target: TargetSpec, opts: RunOptions, trials: Sequence[Trial],
              duration_s: float, mutant: MutantSpec | None = None) -> Finding:
    """Merge trials into one finding: violated when any trial violated, else held."""
    counts = Counts()
    for t in trials:
        counts = counts + t.counts
    bad = [t for t in trials if t.violated]
    samples: list[str] = []
    for t in bad or trials:
        if t.sample and t.sample not in samples and len(samples) < 3:
            samples.append(t.sample)
    first = bad[0] if bad else None
    scheduled = [t.schedule for t in trials if t.schedule is not None]
    control = ({"decisions": sum(int(x["decisions"]) for x in scheduled),
                "controlled": sum(int(x["controlled"]) for x in scheduled)}
               if scheduled else None)
    schedule = first.schedule if first is not None else None
    return Finding(
        **_base_finding(check, target, opts, [t.seed for t in trials]),
        verdict=Verdict.VIOLATED if bad else Verdict.HELD,
        trials=len(trials),
        violating_trials=len(bad),
        counts=counts,
        duration_s=duration_s,
        samples=tuple(samples),
        modes=dict(sorted(Counter(t.mode or "-" for t in trials).items())),
        violation_modes=dict(sorted(Counter(t.mode or "-" for t in bad).items())),
        replay=replay_command(check, target, first.seed, opts, mutant,
                              schedule["text"] if schedule else None,
                              first.index) if first else None,
        ops=first.ops if first else (),
        schedule=schedule,
        control=control,
    )


async def _false_claim(check: CheckSpec, target: TargetSpec, opts: RunOptions,
                       workdir: Path) -> tuple[str, str | None] | None:
    """Verify the lane's claims both ways on a real instance: None, or (reason, traceback)."""
    return await probe_claims(target, dict(opts.services), workdir,
                              close_scope=check.requires_terminal_close)


def lane_claims(target: TargetSpec, services: Mapping[str, str], tmpdir: str | None) -> (
        str | None):
    """In a child: every claim of ``target`` verified on a real instance, the scope of its
    close() included; None when they are all true, else what is false."""
    with tempfile.TemporaryDirectory(prefix="arib-claims-", dir=tmpdir) as tmp:
        found = anyio.run(functools.partial(probe_claims, target, dict(services), Path(tmp),
                                            close_scope=True), backend="asyncio")
    return None if found is None else found[0]


async def probe_claims(target: TargetSpec, services: dict[str, str], workdir: Path, *,
                       close_scope: bool) -> tuple[str, str | None] | None:
    """Build ``target`` once and verify its claims: None, or (what is false, traceback)."""
    probe_root = workdir / "claims"
    probe_root.mkdir()
    try:
        handle = await target.build(BuildContext(probe_root, "arib-claims", services))
    except NotApplicable:  # no instance can exist here: no claim to verify; trials abstain
        return None
    except Exception as exc:  # noqa: BLE001
        return f"target {target.name!r} could not be built: {exc!r}", traceback.format_exc()
    try:
        false_claim = verify_claims(target, handle.session)
        if false_claim is None:
            false_claim = await family_claims(target, handle.session)
        if false_claim is None and close_scope:
            false_claim = await verify_close_scope(target, handle.session)
    except Exception as exc:  # noqa: BLE001 - a claim probe the backend broke
        false_claim = f"claims of target {target.name!r} could not be verified: {exc!r}"
    finally:
        await handle.dispose()
    return (false_claim, None) if false_claim else None


async def family_claims(target: TargetSpec, obj: Any) -> str | None:
    """The active family's own claims about ``target`` (its ``verify`` hook) checked on
    ``obj``, a probe instance; None when true or when the family has no such hook."""
    family = active_family()
    if not family.verify:
        return None
    found = family.resolve("verify")(target, obj)
    if inspect.isawaitable(found):
        found = await found
    return None if found is None else str(found)


def _timed_out(check: CheckSpec, target: TargetSpec, opts: RunOptions, index: int, seed: int,
               seeds: Sequence[int], duration_s: float, note: str = "") -> Finding:
    return error_finding(check, target, opts,
                         f"trial {index} (seed {seed}) exceeded the check timeout of "
                         f"{check.timeout_s:.1f}s{note}", None, duration_s, seeds,
                         timed_out=True)


async def _judge(check: CheckSpec, target: TargetSpec, opts: RunOptions,
                 mutant: MutantSpec | None, workdir: Path) -> Finding:
    seeds = opts.seeds(check, target)
    started = time.perf_counter()

    def elapsed() -> float:
        return time.perf_counter() - started

    if opts.verify_claims or (mutant is not None and mutant.claims is not None):
        false_claim = await _false_claim(check, target, opts, workdir)
        if false_claim:
            return error_finding(check, target, opts, false_claim[0], false_claim[1],
                                 elapsed(), seeds)
    if check.requires_close and not target.claims.has_close:
        return Finding(
            **_base_finding(check, target, opts, ()), verdict=Verdict.NOT_APPLICABLE,
            trials=0, violating_trials=0, counts=Counts(), duration_s=elapsed(),
            reason=f"{target.backend} offers no close(); verified against the runtime object",
        )
    if check.requires_terminal_close and not target.claims.close_is_terminal:
        return Finding(
            **_base_finding(check, target, opts, ()), verdict=Verdict.NOT_APPLICABLE,
            trials=0, violating_trials=0, counts=Counts(), duration_s=elapsed(),
            reason=f"close() does not end the session here, as documented: "
                   f"{target.claims.close_note} (verified: a read after close() works)",
        )

    trials: list[Trial] = []
    old_interval = sys.getswitchinterval()
    planner = TrialPlanner(check.schedule, opts.schedule) if check.concurrent else None
    for index, seed in enumerate(seeds, start=opts.first_index):
        if planner is not None and planner.same_seed:
            seed = seeds[0]  # an enumeration: one program, a new schedule every trial
        sched = planner.scheduler(seed, index) if planner is not None else None
        root = workdir / f"trial-{index}"
        root.mkdir()
        ctx = TrialContext(target, BuildContext(root, f"arib-{seed:x}", dict(opts.services)),
                           index, seed, opts.params,
                           deadline=time.monotonic() + check.timeout_s - elapsed())
        sys.setswitchinterval(SWITCH_INTERVAL_S)
        # Covers the trial and its cleanup: both can wait on a thread that never returns.
        def deadline(index: int = index, seed: int = seed) -> Finding:
            sys.setswitchinterval(old_interval)  # the stuck threads may still be spinning
            return _timed_out(check, target, opts, index, seed, seeds, elapsed(),
                              " and did not end when cancelled (a worker thread blocked)")

        watchdog = Watchdog(check.timeout_s + WATCHDOG_SLACK_S, deadline)
        with watchdog:
            try:
                with anyio.fail_after(check.timeout_s):
                    if sched is None:
                        trials.append(await check.run_trial(ctx))
                    else:
                        with activated(sched):
                            trial = await check.run_trial(ctx)
                        trials.append(_scheduled(check, planner, sched, trial))  # type: ignore[arg-type]
                if opts.stop_on_violation and trials[-1].violated:
                    break
                if planner is not None and planner.exhausted:
                    break
            except NotApplicable as exc:
                return Finding(
                    **_base_finding(check, target, opts, ()), verdict=Verdict.NOT_APPLICABLE,
                    trials=0, violating_trials=0, counts=Counts(), duration_s=elapsed(),
                    reason=f"{exc} (found on the runtime object in trial {index})",
                )
            except TimeoutError:
                return _timed_out(check, target, opts, index, seed, seeds, elapsed())
            except ScheduleError as exc:  # a replay's schedule that is not this trial's
                return dataclasses.replace(
                    error_finding(check, target, opts, str(exc), None, elapsed(), seeds),
                    modes={SCHEDULE_MISMATCH: 1})
            except _Unscheduled as exc:
                return error_finding(check, target, opts, str(exc), None, elapsed(), seeds)
            except Exception as exc:  # noqa: BLE001 - judged: the backend's, or harness error
                where = backend_raised(exc, check_folder(check.run_trial))
                if where is None:
                    return error_finding(
                        check, target, opts,
                        f"trial {index} (seed {seed}) raised out of the check: {exc!r}",
                        traceback.format_exc(), elapsed(), seeds)
                # The backend's exception is evidence (arib.blame): a violated trial.
                trials.append(Trial(index, seed, True, Counts(errors=1), mode=BLAME_MODE,
                                    sample=f"the backend raised {describe(exc)} at {where}, "
                                           f"out of the check's calls", ops=tuple(ctx.ops)))
                if opts.stop_on_violation:
                    break
            finally:
                sys.setswitchinterval(old_interval)
                with anyio.CancelScope(shield=True):
                    await ctx.dispose()
    return summarize(check, target, opts, trials, elapsed(), mutant)


SCHEDULE_MISMATCH = "schedule_mismatch"  # the mode of a refused replay's error finding


class _Unscheduled(Exception):
    """A concurrent check's trial that cannot count: it started no actor under its scheduler,
    or the scheduler failed."""


def _scheduled(check: CheckSpec, planner: TrialPlanner, sched: Scheduler, trial: Trial) -> Trial:
    """A concurrent check's trial with its schedule; _Unscheduled when it held without any
    actor (its race ran outside the scheduler) or the scheduler itself failed."""
    where = f"trial {trial.index} (seed {trial.seed})"
    if sched.failure is not None:
        raise _Unscheduled(f"the scheduler of {check.id!r} failed in {where}: "
                           f"{sched.failure!r}")
    if not sched.actors and not trial.violated:
        raise _Unscheduled(
            f"check {check.id!r} is declared concurrent (CheckSpec.concurrent) but its {where} "
            f"started no actor through the scheduler: its race ran unseen, uncontrolled; start "
            f"the racing calls with arib.checks.base.actors(), race() or race_threads(), or "
            f"declare it not concurrent")
    planner.done(sched)
    return dataclasses.replace(trial, schedule=sched.record().to_json())


async def _judge_and_deliver(check: CheckSpec, target: TargetSpec, opts: RunOptions,
                             mutant: MutantSpec | None, workdir: Path) -> Finding:
    finding = await _judge(check, target, opts, mutant, workdir)
    if in_child():
        # The finding is complete and every handle disposed; the event loop would still join
        # worker threads that a mutant left blocked (seconds, up to the lock timeout).
        shutil.rmtree(workdir, ignore_errors=True)
        finish_early(finding)
    return finding


@contextlib.contextmanager
def _workdir(base: str | None) -> Iterator[Path]:
    """A fresh folder in this child's own folder under ``base`` (the parent removes that
    folder even if the child is killed)."""
    with tempfile.TemporaryDirectory(prefix="arib-", dir=scratch.child_folder(base)) as tmp:
        yield Path(tmp)


def claims_beforehand(check: CheckSpec, target: TargetSpec, opts: RunOptions,
                      ) -> tuple[RunOptions, Finding | None]:
    """In a child: the lane's claims verified now, as ``run_check`` would first do; returns
    the options for a run that skips that probe, and the error finding of a false claim (or
    None). The coverage run records only the check's own trials this way: what the probe ran
    is not what the check reached (mutant runs skip the probe too)."""
    if not opts.verify_claims:
        return opts, None
    started = time.perf_counter()
    with _workdir(opts.tmpdir) as tmp:
        found = anyio.run(_false_claim, check, target, opts, tmp, backend="asyncio")
    skip = dataclasses.replace(opts, verify_claims=False)
    if found is None:
        return skip, None
    return skip, error_finding(check, target, opts, found[0], found[1],
                               time.perf_counter() - started, opts.seeds(check, target))


def run_check(check: CheckSpec, target: TargetSpec, opts: RunOptions,
              mutant: MutantSpec | None = None) -> Finding:
    """Judge ``check`` on ``target`` (with ``mutant`` installed, if given) into a Finding."""
    started = time.perf_counter()
    if mutant is not None and mutant.claims is not None:
        target = target.with_claims(mutant.claims)
    try:
        if mutant is not None:
            # A mutant that drops an await leaves coroutines unawaited; the verdict says so.
            warnings.simplefilter("ignore", RuntimeWarning)
            mutant.apply()
        backend_options = Loop(opts.loop).backend_options()
        with _workdir(None if check.on_disk else opts.tmpdir) as tmp:
            return anyio.run(_judge_and_deliver, check, target, opts, mutant, tmp,
                             backend="asyncio", backend_options=backend_options)
    except Exception as exc:  # noqa: BLE001 - never raise for what a run did
        return error_finding(check, target, opts, f"harness failure: {exc!r}",
                             traceback.format_exc(), time.perf_counter() - started)


sdk_version()  # read here, in the parent, so that forked children find it cached
