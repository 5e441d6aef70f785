"""races measure's pure parts: the seeded order, first violations, a side's figures."""

from __future__ import annotations

from pathlib import Path

import pytest

from arib.ground.errors import UsageError
from arib.races.corpus import Entry, EntryKind
from arib.races.measure import Plan, _side_result, first_violation, measure, sample_order

ENTRIES = [Entry("fam", "1.0", f"C-{i}", "lane", None, EntryKind.RACY_CELL) for i in range(20)]


def test_sample_order_is_seeded_and_independent_of_the_input_order() -> None:
    one = sample_order(ENTRIES, 3)
    assert one == sample_order(list(reversed(ENTRIES)), 3)
    assert one != sample_order(ENTRIES, 4)
    assert sorted(one, key=lambda e: e.key) == sorted(ENTRIES, key=lambda e: e.key)


def test_first_violation_is_one_based() -> None:
    assert first_violation([False, False, True, True]) == 3
    assert first_violation([True]) == 1
    assert first_violation([False]) is None
    assert first_violation(None) is None


def test_side_result_pools_judged_runs_only() -> None:
    runs = [
        {"status": "ok", "verdict": "violated", "trials": 4, "violating_trials": 1,
         "per_trial": [False, False, True, False]},
        {"status": "ok", "verdict": "held", "trials": 4, "violating_trials": 0,
         "per_trial": [False] * 4},
        {"status": "ok", "verdict": "error", "trials": 1, "violating_trials": 0},
        {"status": "unknown", "detail": "no such mutant"},
    ]
    result = _side_result(runs)
    assert (result["judged_runs"], result["violated_runs"]) == (2, 1)
    assert (result["trials"], result["violating_trials"], result["rate"]) == (8, 1, 0.125)
    assert result["first_violation"] == 3


def test_measure_refuses_an_unknown_entry_key(tmp_path: Path) -> None:
    plan = Plan(before=tmp_path, after=tmp_path, entries=("nope",))
    with pytest.raises(UsageError, match="'nope'"):
        measure(plan, ENTRIES, tmp_path)
