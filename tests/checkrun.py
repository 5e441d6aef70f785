"""Shared by the check tests: run one check with small parameters in a forked child."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from arib.checks.registry import get_check
from arib.execute import RunOptions, run_check
from arib.ground.child import run_one
from arib.ground.model import Finding, Verdict
from arib.ground.services import ServiceManager
from arib.mutants.registry import forced_broken, get_mutant
from arib.targets.base import TargetSpec
from arib.targets.openai_agents.reference import REFERENCE


def run_small(check_id: str, params: Mapping[str, int], mutant: str | None = None,
              lane: TargetSpec = REFERENCE, timeout_s: float = 90,
              services: Mapping[str, str] | None = None) -> Finding:
    """The finding of ``check_id`` on ``lane`` (``mutant`` installed), run in a child
    (``services``: the URLs of the servers a server lane needs)."""
    check = get_check(check_id)
    opts = RunOptions(params=check.resolve_params(params), services=dict(services or {}))
    spec = get_mutant(mutant) if mutant else None
    outcome = run_one(lambda: run_check(check, lane, opts, spec), timeout_s)
    assert outcome.value is not None, outcome.detail
    return outcome.value  # type: ignore[no-any-return]


def forced_broken_finding(check_id: str, params: Mapping[str, int],
                          lane: TargetSpec = REFERENCE) -> Finding:
    """The finding of ``check_id`` on ``lane`` with the family's forced-broken mutant (every
    operation raises) installed, run in a child."""
    check = get_check(check_id)
    opts = RunOptions(params=check.resolve_params(params))
    outcome = run_one(lambda: run_check(check, lane, opts, forced_broken()), 90)
    assert outcome.value is not None, outcome.detail
    return outcome.value  # type: ignore[no-any-return]


def assert_holds_with_its_trials(check_id: str, params: Mapping[str, int]) -> Finding:
    """The check holds on the reference and ran the trials it was given."""
    finding = run_small(check_id, params)
    assert finding.verdict is Verdict.HELD, (finding.samples, finding.reason)
    assert finding.params["trials"] == params["trials"]
    assert finding.trials == params["trials"]
    return finding


def assert_mutant_violates(check_id: str, params: Mapping[str, int], mutant: str,
                           mode: str) -> Finding:
    """Every trial under ``mutant`` is violated in ``mode``, with a replay naming the mutant."""
    finding = run_small(check_id, params, mutant)
    assert finding.verdict is Verdict.VIOLATED
    assert finding.violating_trials == finding.trials
    assert mode in finding.modes
    assert finding.ops and finding.replay and "--mutant" in finding.replay
    return finding


# Whether a redis-server can run here (system or embedded); tests that need one skip without.
HAVE_REDIS = ServiceManager(environ={}).availability("redis") is None
on_redis = pytest.mark.skipif(not HAVE_REDIS, reason="redis server not installed")
