"""Seeded schedules on the LangGraph checks: a replayed violation on a controlled lane (our
reference saver, InMemoryStore, forked writers released one op at a time) repeats its
operations and reads in 10 of 10 runs."""

from __future__ import annotations

import dataclasses

import pytest

from arib.checks.registry import get_check
from arib.execute import RunOptions, run_check
from arib.ground.child import run_one
from arib.ground.model import Finding, Verdict
from arib.ground.schedule import Schedule
from arib.mutants.registry import get_mutant
from arib.targets.base import TargetSpec
from arib.targets.langgraph.lanes import REFERENCE, STORE_MEMORY


def in_child(check_id: str, lane: TargetSpec, opts: RunOptions, mutant: str) -> Finding:
    check, spec = get_check(check_id), get_mutant(mutant)
    outcome = run_one(lambda: run_check(check, lane, opts, spec), 120)
    assert outcome.value is not None, outcome.detail
    return outcome.value  # type: ignore[no-any-return]


@pytest.mark.parametrize(("check_id", "lane", "mutant", "params"), [
    ("ARIB-LGCONC-001", REFERENCE, "lg_reference_writes_follow_last_put",
     {"trials": 2, "writers": 4, "steps": 3, "threads": 2}),
    ("ARIB-LGSTORE-001", STORE_MEMORY, "lg_store_memory_search_by_string_prefix",
     {"trials": 2, "writers": 3, "items": 4}),
    ("ARIB-LGCONC-002", REFERENCE, "lg_reference_writes_to_latest",
     {"trials": 1, "processes": 3, "steps": 3, "threads": 2}),
])
def test_a_replayed_violation_repeats_its_operations_and_reads_10_of_10(
        check_id: str, lane: TargetSpec, mutant: str, params: dict[str, int]) -> None:
    check = get_check(check_id)
    opts = RunOptions(params=check.resolve_params(params))
    found = in_child(check_id, lane, opts, mutant)
    assert found.verdict is Verdict.VIOLATED and found.schedule is not None
    assert found.schedule["uncontrolled"] == 0 and found.replay
    words = found.replay.split()
    seed = int(words[words.index("--trial-seed") + 1])
    index = int(words[words.index("--trial-index") + 1]) if "--trial-index" in words else 0
    replay = dataclasses.replace(opts, trial_seeds=(seed,), first_index=index,
                                 schedule=Schedule.parse(found.schedule["text"]))
    runs = [in_child(check_id, lane, replay, mutant) for _ in range(10)]
    assert all(r.verdict is Verdict.VIOLATED for r in runs)
    assert all(r.ops == found.ops and r.samples[0] == found.samples[0] for r in runs)
    assert len({(r.samples, r.counts, tuple(r.modes.items())) for r in runs}) == 1
    assert all(r.schedule and r.schedule["text"] == found.schedule["text"]
               and r.schedule["diverged"] == 0 for r in runs)
