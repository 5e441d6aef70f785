"""The advanced-API checks (ARIB-BRANCH-001/002/003, ARIB-USAGE-001/002/003, ARIB-TURNS-001):
hold on the reference, are violated by their hand-written mutants, abstain where the API is
missing, and judge correctly on hand-made inputs; plus the reference's advanced API itself."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import anyio
import pytest

from arib.checks.openai_agents._adv_model import MAIN, Catalogue, Figures, Model
from arib.checks.openai_agents._adv_probe import matches
from arib.checks.openai_agents.turns_001 import merge_problem
from arib.checks.registry import get_check
from arib.ground.model import Verdict
from arib.mutants.registry import forced_broken, get_mutant
from arib.targets.openai_agents import reference_turns as turns
from arib.targets.openai_agents.reference import ReferenceSession
from arib.targets.openai_agents.sdk import ADVANCED_SQLITE_FILE, SQLITE_FILE
from tests.checkrun import assert_holds_with_its_trials, assert_mutant_violates, run_small

SMALL: dict[str, dict[str, int]] = {
    "ARIB-BRANCH-001": {"trials": 1},
    "ARIB-BRANCH-002": {"trials": 1, "rounds": 3},
    "ARIB-BRANCH-003": {"trials": 1},
    "ARIB-USAGE-001": {"trials": 1},
    "ARIB-USAGE-002": {"trials": 1},
    "ARIB-USAGE-003": {"trials": 1},
    "ARIB-TURNS-001": {"trials": 1, "turns": 2},
}


def user(text: str) -> dict[str, str]:
    return {"role": "user", "content": text}


def answer(text: str) -> dict[str, str]:
    return {"role": "assistant", "content": text}


@pytest.mark.parametrize("check_id", sorted(SMALL))
def test_holds_on_the_reference(check_id: str) -> None:
    assert_holds_with_its_trials(check_id, SMALL[check_id])


@pytest.mark.parametrize(("check_id", "mutant", "mode"), [
    ("ARIB-BRANCH-001", "reference_branch_copies_turn_n", "wrong_items"),
    ("ARIB-BRANCH-001", "reference_delete_branch_takes_main_copies", "wrong_items"),
    ("ARIB-BRANCH-002", "reference_add_follows_later_switch", "wrong_pop"),
    ("ARIB-BRANCH-003", "reference_empty_branch_unknown", "bad_listing"),
    ("ARIB-USAGE-001", "reference_session_usage_current_branch_only", "wrong_total"),
    ("ARIB-USAGE-002", "reference_tool_usage_skips_image_and_shell", "wrong_tools"),
    ("ARIB-USAGE-003", "reference_store_usage_swallows_errors", "silently_dropped"),
    ("ARIB-TURNS-001", "reference_search_case_sensitive", "wrong_search"),
])
def test_hand_written_reference_mutant_is_violated(check_id: str, mutant: str,
                                                   mode: str) -> None:
    assert_mutant_violates(check_id, SMALL[check_id], mutant, mode)


@pytest.mark.parametrize(("check_id", "mutant", "mode"), [
    ("ARIB-BRANCH-001", "advanced_branch_copies_turn_n", "wrong_items"),
    ("ARIB-BRANCH-001", "advanced_switch_skips_validation", "misuse_accepted"),
    ("ARIB-USAGE-001", "advanced_delete_branch_leaves_usage", "wrong_total"),
    ("ARIB-TURNS-001", "advanced_turn_preview_untruncated", "wrong_turns"),
])
def test_hand_written_sdk_mutant_is_violated(check_id: str, mutant: str, mode: str) -> None:
    clean = run_small(check_id, SMALL[check_id], lane=ADVANCED_SQLITE_FILE)
    assert clean.verdict is Verdict.HELD, clean.samples
    finding = run_small(check_id, SMALL[check_id], mutant, lane=ADVANCED_SQLITE_FILE)
    assert finding.verdict is Verdict.VIOLATED and mode in finding.modes, finding.samples


def test_a_write_started_before_a_switch_stays_on_its_branch_in_the_sdk() -> None:
    """The race ARIB-BRANCH-002 judges: the clean SDK keeps it, the late snapshot does not."""
    params = {"trials": 1, "rounds": 4}
    assert run_small("ARIB-BRANCH-002", params, lane=ADVANCED_SQLITE_FILE).verdict is (
        Verdict.HELD)
    finding = run_small("ARIB-BRANCH-002", params,
                        "advanced_append_files_under_write_time_branch",
                        lane=ADVANCED_SQLITE_FILE)
    assert finding.verdict is Verdict.VIOLATED, finding.samples


@pytest.mark.parametrize(("check_id", "mode", "evidence"), [
    ("ARIB-BRANCH-003", "bad_listing", "does not exist"),
    ("ARIB-USAGE-002", "wrong_tools", "image_generation_call"),
    ("ARIB-USAGE-003", "silently_dropped", "returned normally"),
])
def test_findings_on_the_sdk(check_id: str, mode: str, evidence: str) -> None:
    """What these checks find on AdvancedSQLiteSession (openai-agents 0.24.0), replayable."""
    finding = run_small(check_id, SMALL[check_id], lane=ADVANCED_SQLITE_FILE)
    assert finding.verdict is Verdict.VIOLATED
    assert mode in finding.modes and any(evidence in s for s in finding.samples)
    assert finding.replay and "--lane advanced-sqlite-file" in finding.replay


@pytest.mark.parametrize("check_id", ["ARIB-BRANCH-001", "ARIB-USAGE-003", "ARIB-TURNS-001"])
def test_abstains_where_the_api_is_missing(check_id: str) -> None:
    finding = run_small(check_id, SMALL[check_id], lane=SQLITE_FILE)
    assert finding.verdict is Verdict.NOT_APPLICABLE
    assert finding.reason and "SQLiteSession offers no" in finding.reason


@pytest.mark.parametrize("check_id", sorted(SMALL))
def test_forced_broken_reference_is_violated(check_id: str) -> None:
    from arib.execute import RunOptions, run_check
    from arib.ground.child import run_one
    from arib.targets.openai_agents.reference import REFERENCE

    check = get_check(check_id)
    opts = RunOptions(params=check.resolve_params(SMALL[check_id]))
    outcome = run_one(lambda: run_check(check, REFERENCE, opts, forced_broken()), 90)
    assert outcome.value is not None and outcome.value.verdict is Verdict.VIOLATED


def test_every_check_names_existing_mutants() -> None:
    for check_id in SMALL:
        check = get_check(check_id)
        assert check.generated, check_id
        for name in check.mutants:
            assert get_mutant(name).description


# --- the model and the judges ---------------------------------------------------------------

def test_model_branch_copies_the_turns_before_n_and_usage_follows_the_turn() -> None:
    cat, m = Catalogue("t"), Model()
    m.append(MAIN, [cat.user("a"), cat.assistant("1"), cat.user("b"), cat.assistant("2")])
    m.create(MAIN, 2, "alt")
    assert [i.get("content") for i in m.items("alt")][0] == "a" and len(m.items("alt")) == 2
    m.append("alt", [cat.user("c")])
    m.store("alt", Figures(1, 10, 5, 0, 0))
    assert m.visible_usage("alt") == {2: Figures(1, 10, 5, 0, 0)}
    m.pop("alt")
    assert m.visible_usage("alt") == {}
    m.append("alt", [cat.user("c again")])  # turn 2 again, a new incarnation
    assert m.visible_usage("alt") == {} and m.session_usage() is None
    assert m.listing("alt") == {MAIN: (4, 2, False), "alt": (3, 2, True)}


def test_search_is_ascii_case_insensitive_and_literal() -> None:
    assert matches("Hello WORLD", "hello world") and matches("100% sure", "%")
    assert not matches("café", "CAFÉ") and matches("café", "CAFé")
    assert matches([{"type": "input_text", "text": "parts text"}], "PARTS")
    assert not matches("snakecase", "_")


def test_merge_problem_sees_a_split_or_reordered_batch() -> None:
    a1, a2, b1 = [user("a1"), answer("a1")], [user("a2")], [user("b1")]
    batches = {"A": [a1, a2], "B": [b1]}
    assert merge_problem([*a1, *b1, *a2], batches) is None
    assert "split" in str(merge_problem([a1[0], *b1, a1[1], *a2], batches))
    assert "before" in str(merge_problem([*a2, *a1, *b1], batches))
    assert "not all there" in str(merge_problem([*a1, *b1], batches))


# --- the reference's advanced API -----------------------------------------------------------

def test_reference_turn_arithmetic() -> None:
    items: list[Any] = [answer("pre"), user("a"), answer("1"), user("b")]
    assert turns.turn_numbers(items) == [0, 1, 1, 2]
    assert turns.turn_anchors(items, [10, 11, 12, 13]) == {0: 10, 1: 11, 2: 13}
    assert [turns.window([1, 2, 3], k) for k in (None, -1, 0, 2, 5)] == [
        [1, 2, 3], [1, 2, 3], [], [2, 3], [1, 2, 3]]
    calls = [user("q"), {"type": "function_call", "name": "f", "namespace": "ns"},
             {"type": "function_call_output", "call_id": "c"},
             {"type": "tool_search_call"}, {"type": "tool_search_output"},
             {"type": "mcp_call", "server_label": "s", "name": "m"}]
    assert Counter(turns.tool_usage(calls)) == Counter(
        [("ns.f", 1, 1), ("tool_search", 1, 1), ("s.m", 1, 1)])
    assert turns.preview("x" * 101, 100) == "x" * 100 + "..."


def test_reference_branches_usage_and_fifo_order(tmp_path: Path) -> None:
    """Operations of one instance run in call order, on the branch current at their call."""
    from arib.checks.openai_agents._adv_probe import run_result

    async def scenario() -> None:
        s = ReferenceSession("s", tmp_path / "r.db")
        await s.add_items([user("a"), answer("1"), user("b"), answer("2")])
        assert await s.create_branch_from_turn(2, "alt") == "alt"
        await s.add_items([user("alt b")])
        async with anyio.create_task_group() as tg:
            tg.start_soon(s.add_items, [answer("on alt")])
            await anyio.sleep(0)
            await s.switch_to_branch(MAIN)  # started after the append: cannot redirect it
        assert [i["content"] for i in await s.get_items(branch_id="alt")] == [
            "a", "1", "alt b", "on alt"]
        await s.store_run_usage(run_result(Figures(2, 30, 20, 1, 1)))
        assert (await s.get_turn_usage(2))["total_tokens"] == 50
        assert (await s.pop_item())["content"] == "2"
        assert (await s.get_session_usage()) is not None  # turn 2 still starts with "b"
        await s.pop_item()
        assert (await s.get_session_usage()) is None  # turn 2 emptied: no usage reported
        with pytest.raises(ValueError):
            await s.delete_branch(MAIN)
        await s.delete_branch("alt")
        with pytest.raises(ValueError):
            await s.create_branch_from_turn(1, "alt")  # a used id stays used
        await s.close()

    anyio.run(scenario)


def test_reference_keeps_main_where_the_core_keeps_it(tmp_path: Path) -> None:
    """main's items are the core table's: the protocol operations still act there."""
    import sqlite3

    async def scenario() -> None:
        s = ReferenceSession("s", tmp_path / "r.db")
        await s.add_items([user("x")])
        await s.close()

    anyio.run(scenario)
    rows = sqlite3.connect(tmp_path / "r.db").execute("SELECT body FROM items").fetchall()
    assert [json.loads(b) for (b,) in rows] == [user("x")]
