"""``validate()``: judge a user's own store with the bench's checks, each in a forked child.

Every check runs in its own forked child with the bench's time limits (the check's timeout,
then a hard kill after the grace the bench gives), so a store that hangs or crashes is an
``error`` finding, never a hung test. ``validate`` is synchronous; ``avalidate`` awaits it in a
worker thread, so an async test's event loop keeps running. Asked for no particular checks,
it runs the ones the store's capabilities call for (``arib.api.capability``) and lists the
others in the report with the reason.
"""

from __future__ import annotations

import asyncio
import contextvars
import dataclasses
import functools
import shlex
import time
from collections.abc import Iterable, Mapping
from typing import Any

from anyio import to_thread

from arib.admission import GRACE_S
from arib.api.capability import DEFAULT_CHECKS, plan
from arib.api.lane import Factory, Lane, as_lane
from arib.api.report import Report
from arib.checks.base import CheckSpec
from arib.checks.registry import get_check
from arib.execute import RunOptions, child_finding, error_finding, run_check
from arib.ground.child import run_jobs
from arib.ground.errors import ParameterError, UsageError
from arib.ground.model import Finding
from arib.runs.selection import check_list
from arib.targets.base import TargetSpec
from arib.warm import warm

__all__ = ["DEFAULT_CHECKS", "avalidate", "select_checks", "validate"]


def select_checks(checks: Iterable[str] | str | None) -> tuple[CheckSpec, ...]:
    """The checks named (None: every check of DEFAULT_CHECKS, before the store's capabilities
    pick among them); an unknown id raises UnknownNameError."""
    if isinstance(checks, str):
        checks = [c.strip() for c in check_list("checks=", checks, "check id",
                                                "'ARIB-CONC-001,ARIB-POP-001'").split(",")]
    ids = tuple(DEFAULT_CHECKS if checks is None else checks)
    if not ids:
        raise UsageError("checks=() names no check; name at least one (e.g. 'ARIB-CONC-001') "
                         "or leave checks out for the default set")
    return tuple(get_check(i) for i in dict.fromkeys(ids))


def _options(check: CheckSpec, params: Mapping[str, Mapping[str, int]], trials: int | None,
             seed: int, trial_seed: int | None) -> RunOptions:
    overrides = dict(params.get(check.id, {}))
    if trials is not None:
        overrides[check.trials_param] = trials
    return RunOptions(params=check.resolve_params(overrides), run_seed=seed,
                      trial_seeds=None if trial_seed is None else (trial_seed,))


def _judge(check: CheckSpec, target: TargetSpec, opts: RunOptions) -> Finding:
    """In a forked child: no event loop runs here, even when the parent forked from inside
    one (its running loop and the context variables naming its async library are reset)."""
    asyncio.events._set_running_loop(None)
    return contextvars.Context().run(run_check, check, target, opts)


def _trial_seed(replay: str | None) -> int | None:
    words = shlex.split(replay or "")
    return int(words[words.index("--trial-seed") + 1]) if "--trial-seed" in words else None


def _replay(user: Lane, finding: Finding, check: CheckSpec, opts: RunOptions) -> str | None:
    """The Python call that reruns the first violating trial of ``finding`` alone."""
    seed = _trial_seed(finding.replay)
    if seed is None:
        return None
    changed = {k: v for k, v in opts.params.items()
               if k != check.trials_param and v != check.resolve_params()[k]}
    extra = f", params={{{check.id!r}: {changed!r}}}" if changed else ""
    return (f"validate({user.label}, checks=[{check.id!r}], seed={opts.run_seed}, "
            f"trial_seed={seed}{extra})")


def _for_user(user: Lane, finding: Finding) -> Finding:
    """A finding whose fix names the user's factory rather than an adapter of targets/."""
    reason = finding.reason
    if reason and "fix the adapter's Claims" in reason:
        reason = reason.replace("fix the adapter's Claims",
                                f"fix the claims given to @lane(...) on {user.label}")
    return dataclasses.replace(finding, reason=reason)


def _check_params(params: Mapping[str, Mapping[str, int]], checks: tuple[CheckSpec, ...],
                  trials: int | None) -> None:
    chosen = {c.id for c in checks}
    for check_id in params:
        if check_id not in chosen:
            raise ParameterError(f"params names {check_id!r}, which is not among the checks "
                                 f"run ({', '.join(sorted(chosen))}); add it to checks= or "
                                 f"drop its parameters")
    if trials is not None and (not isinstance(trials, int) or trials < 1):
        raise ParameterError(f"trials={trials!r}: the rule: a whole number of at least 1")


def validate(factory: Lane | Factory, *, checks: Iterable[str] | str | None = None,
             params: Mapping[str, Mapping[str, int]] | None = None, trials: int | None = None,
             seed: int = 0, trial_seed: int | None = None, workers: int = 2,
             timeout_s: float | None = None) -> Report:
    """Judge the store ``factory`` makes with ``checks``; by default, with every check of
    DEFAULT_CHECKS whose needs the object meets (the report lists the others, and why)."""
    started = time.perf_counter()
    params = dict(params or {})
    candidates = select_checks(checks)
    _check_params(params, candidates, trials)
    made = plan(as_lane(factory), None if checks is None else candidates)
    user = made.lane
    selected = made.run
    if timeout_s is not None:
        selected = tuple(dataclasses.replace(c, timeout_s=float(timeout_s)) for c in selected)
    target = user.spec()
    opts = [_options(c, params, trials, seed, trial_seed) for c in selected]
    limits = [c.timeout_s + GRACE_S for c in selected]
    jobs = [functools.partial(_judge, c, target, o) for c, o in zip(selected, opts, strict=True)]
    outcomes = run_jobs(jobs, workers=workers, timeout_s=limits,
                        before_fork=lambda i: warm(selected[i], target))
    findings: dict[str, Finding] = {}
    for check_id, reason in made.errors.items():  # a probe raised: judged as the harness's error
        check = get_check(check_id)
        opt = _options(check, params, trials, seed, trial_seed)
        findings[check_id] = _for_user(user, error_finding(check, target, opt, reason))
    replays: dict[str, str] = {}
    for check, opt, outcome, limit in zip(selected, opts, outcomes, limits, strict=True):
        finding = _for_user(user, child_finding(check, target, opt, outcome, limit))
        findings[check.id] = finding
        replay = _replay(user, finding, check, opt)
        if replay:
            replays[check.id] = replay
    ordered = [findings[c.id] for c in candidates if c.id in findings]
    return Report(factory=user.label, lane=target.name, seed=seed, findings=tuple(ordered),
                  duration_s=time.perf_counter() - started, replays=replays,
                  skipped=dict(made.skipped), capabilities=made.capabilities)


async def avalidate(factory: Lane | Factory, **options: Any) -> Report:
    """``validate()`` from inside a running event loop: the forked work runs in a thread."""
    call = functools.partial(validate, factory, **options)
    return await to_thread.run_sync(call)
