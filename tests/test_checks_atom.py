"""ARIB-ATOM-001: holds on the reference and the SQLite lanes, kills its hand-written mutants,
and names the defect of a read on hand-made inputs."""

from __future__ import annotations

import pytest

from arib.checks.common import canonical
from arib.checks.openai_agents.atom_001 import ANY, compare
from arib.ground.model import Verdict
from arib.targets.registry import get_target
from tests.checkrun import assert_holds_with_its_trials, assert_mutant_violates, run_small

SMALL = {"trials": 2, "steps": 16}


def item(name: str) -> dict[str, str]:
    return {"role": "user", "content": name}


def test_holds_on_the_reference() -> None:
    assert_holds_with_its_trials("ARIB-ATOM-001", SMALL)


@pytest.mark.parametrize("lane", ["sqlite-memory", "sqlite-file"])
def test_holds_on_the_sqlite_lanes(lane: str) -> None:
    finding = run_small("ARIB-ATOM-001", SMALL, lane=get_target(lane))
    assert finding.verdict is Verdict.HELD, finding.samples


@pytest.mark.parametrize(("mutant", "mode"), [
    ("reference_add_batch_item_by_item", "failed_write_left_items"),
    ("reference_writes_commit_lazily", "acknowledged_write_undone"),
])
def test_hand_written_mutant_is_violated(mutant: str, mode: str) -> None:
    assert_mutant_violates("ARIB-ATOM-001", SMALL, mutant, mode)


def test_the_sqlite_memory_mutant_undoes_acknowledged_appends() -> None:
    finding = run_small("ARIB-ATOM-001", SMALL, "sqlite_writes_commit_lazily",
                        lane=get_target("sqlite-memory"))
    assert finding.verdict is Verdict.VIOLATED
    assert "acknowledged_write_undone" in finding.modes


def test_compare_matches_the_model_and_wildcards() -> None:
    assert compare([item("a"), item("x")], [item("a"), ANY], set()) is None
    assert compare([], [], set()) is None


def test_compare_names_a_failed_write_that_left_items() -> None:
    found = compare([item("a"), item("f")], [item("a")], {canonical(item("f"))})
    assert found is not None and found.mode == "failed_write_left_items"
    assert found.counts.foreign == 1


def test_compare_names_an_undone_acknowledged_write() -> None:
    found = compare([item("a")], [item("a"), item("b")], set())
    assert found is not None and found.mode == "acknowledged_write_undone"
    assert found.counts.lost == 1


def test_compare_names_a_popped_item_that_came_back() -> None:
    found = compare([item("a"), item("p")], [item("a")], set())
    assert found is not None and found.mode == "popped_or_cleared_item_back"
