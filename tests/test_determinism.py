"""Two runs on the same versions give identical verdicts and violation counts."""

from __future__ import annotations

import pytest

from checks.registry import load_checks
from harness.child import run_one
from harness.execute import RunOptions, run_check
from targets.registry import ALL_TARGETS


def signatures(run_seed: int):
    out = []
    for check in load_checks():
        params = check.resolve_params({"trials": 2})
        for lane in ALL_TARGETS:
            opts = RunOptions(params=params, run_seed=run_seed)
            finding = run_one(lambda c=check, t=lane, o=opts: run_check(c, t, o), 60).value
            out.append((lane.name, *finding.signature, finding.seeds))
    return out


@pytest.mark.slow
def test_two_runs_agree_on_every_verdict_and_count():
    first, second = signatures(7), signatures(7)
    assert first == second
    assert any(sig[1] == "violated" for sig in first)
    assert any(sig[1] == "held" for sig in first)
