"""ARIB-POP-001, ARIB-CLEAR-001, ARIB-ORDER-001, ARIB-LIMIT-001: hold on the reference, kill a
hand-written mutant each, and count correctly on hand-made inputs."""

from __future__ import annotations

from typing import Any

import pytest

from arib.checks.openai_agents.clear_001 import (
    Call,
    judge_clear,
    serial_order_problem,
    split_batches,
)
from arib.checks.openai_agents.limit_001 import Stamp, Window, judge_limit, window_problem
from arib.checks.openai_agents.order_001 import Append, judge_order
from arib.checks.openai_agents.pop_001 import judge_pops
from arib.checks.registry import get_check
from arib.ground.model import Counts
from arib.mutants.registry import get_mutant
from tests.checkrun import assert_holds_with_its_trials, assert_mutant_violates

SMALL: dict[str, dict[str, int]] = {
    "ARIB-POP-001": {"trials": 3},
    "ARIB-CLEAR-001": {"trials": 3},
    "ARIB-ORDER-001": {"trials": 3},
    "ARIB-LIMIT-001": {"trials": 2, "appends": 5, "reads": 5},
}


def item(name: str) -> dict[str, str]:
    return {"role": "user", "content": name}


@pytest.mark.parametrize("check_id", sorted(SMALL))
def test_holds_on_the_reference(check_id: str) -> None:
    assert_holds_with_its_trials(check_id, SMALL[check_id])


@pytest.mark.parametrize(("check_id", "mutant", "mode"), [
    ("ARIB-POP-001", "reference_pop_reads_then_deletes", "duplicated"),
    ("ARIB-POP-001", "reference_pop_gives_up_when_busy", "short"),
    ("ARIB-CLEAR-001", "reference_clear_pops_counted_items", "survived_clear"),
    ("ARIB-CLEAR-001", "reference_add_batch_item_by_item", "partial_batch"),
    ("ARIB-ORDER-001", "reference_add_batch_item_by_item", "batch_split"),
    ("ARIB-ORDER-001", "reference_read_orders_by_body", "real_time_order"),
    ("ARIB-LIMIT-001", "reference_limit_returns_oldest", "wrong_window"),
    ("ARIB-LIMIT-001", "reference_limit_window_from_stale_max", "torn_window"),
])
def test_hand_written_mutant_is_violated(check_id: str, mutant: str, mode: str) -> None:
    assert_mutant_violates(check_id, SMALL[check_id], mutant, mode)


def test_every_new_check_names_existing_mutants() -> None:
    for check_id in SMALL:
        check = get_check(check_id)
        assert check.generated, check_id
        for name in check.mutants:
            assert get_mutant(name).description


# --- ARIB-POP-001 counting -----------------------------------------------------------------

ITEMS = [item(f"i{n}") for n in range(5)]


def test_pop_exact_when_newest_returned_and_oldest_left() -> None:
    got = [ITEMS[3], ITEMS[4]]  # any order: the pops raced
    verdict = judge_pops(ITEMS, 2, got, ITEMS[:3])
    assert (verdict.mode, verdict.counts) == ("exact", Counts())


def test_pop_race_on_emptying_store() -> None:
    got = [*reversed(ITEMS[:2]), None, None]
    assert judge_pops(ITEMS[:2], 4, got, []).mode == "exact"
    assert judge_pops([], 3, [None, None, None], []).mode == "exact"


def test_pop_same_item_twice_is_duplicated() -> None:
    verdict = judge_pops(ITEMS, 2, [ITEMS[4], ITEMS[4]], ITEMS[:4])
    assert verdict.mode == "duplicated" and verdict.counts.duplicated == 1


def test_pop_returned_but_still_stored_is_duplicated() -> None:
    verdict = judge_pops(ITEMS, 1, [ITEMS[4]], ITEMS)
    assert verdict.mode == "duplicated" and verdict.counts.duplicated == 1


def test_pop_removed_but_not_returned_is_lost() -> None:
    verdict = judge_pops(ITEMS, 2, [ITEMS[4], None], ITEMS[:3])
    assert verdict.mode == "lost" and verdict.counts.lost == 1


def test_pop_none_while_items_remain_is_short() -> None:
    verdict = judge_pops(ITEMS, 2, [ITEMS[4], None], ITEMS[:4])
    assert verdict.mode == "short" and verdict.counts == Counts()


def test_pop_from_the_oldest_end_is_wrong_end() -> None:
    assert judge_pops(ITEMS, 2, [ITEMS[0], ITEMS[1]], ITEMS[2:]).mode == "wrong_end"


def test_pop_that_raises_is_a_violation_with_the_exception() -> None:
    verdict = judge_pops(ITEMS, 2, [ITEMS[4]], ITEMS[:4], ["pop 1: RuntimeError: boom"])
    assert verdict.mode == "pop_raised" and "boom" in (verdict.sample or "")
    assert verdict.counts.raised == 1 and verdict.counts.wrong_result == 0


# --- ARIB-CLEAR-001 counting ---------------------------------------------------------------

SEEDS = [item("s0"), item("s1")]
BATCHES = {"a": [item("a0"), item("a1")], "b": [item("b0"), item("b1")]}


def test_clear_split_batches_names_whole_batches() -> None:
    present, counts, problem = split_batches([*BATCHES["b"], *BATCHES["a"]], BATCHES, SEEDS)
    assert (present, counts, problem) == (["b", "a"], Counts(), None)


def test_clear_partial_batch_and_surviving_seed() -> None:
    verdict = judge_clear([BATCHES["a"][1]], BATCHES, SEEDS, [])
    assert verdict.mode == "partial_batch" and verdict.counts.lost == 1
    verdict = judge_clear([SEEDS[0], *BATCHES["a"]], BATCHES, SEEDS, [])
    assert verdict.mode == "survived_clear" and verdict.counts.foreign == 1


def test_clear_serial_orders() -> None:
    clear = Call("clear 0", None, 0, 5)
    a = Call("add a", "a", 1, 2)
    b = Call("add b", "b", 6, 7)  # began after the only clear returned: must be visible
    assert serial_order_problem(["b"], [clear, a, b]) is None
    assert serial_order_problem(["a", "b"], [clear, a, b]) is None
    assert "missing" in (serial_order_problem([], [clear, a, b]) or "")
    early = Call("add e", "e", 0, 1)
    late_clear = Call("clear 1", None, 2, 3)  # began after e returned: e cannot survive
    assert "survived" in (serial_order_problem(["e"], [early, late_clear]) or "")


def test_clear_last_clear_is_chosen_among_several() -> None:
    c0 = Call("clear 0", None, 0, 1)
    c1 = Call("clear 1", None, 0, 9)
    a = Call("add a", "a", 2, 3)  # after c0, overlapping c1: may be cleared by c1
    assert serial_order_problem([], [c0, c1, a]) is None
    assert serial_order_problem(["a"], [c0, c1, a]) is None
    b = Call("add b", "b", 10, 11)  # after both clears: must be visible
    assert serial_order_problem([], [c0, c1, a, b]) is not None


def test_clear_listed_against_completion_order_is_not_serializable() -> None:
    clear = Call("clear 0", None, 0, 1)
    a = Call("add a", "a", 2, 3)
    b = Call("add b", "b", 4, 5)
    final = [*BATCHES["b"], *BATCHES["a"]]
    assert judge_clear(final, BATCHES, SEEDS, [clear, a, b]).mode == "not_serializable"
    ok = [*BATCHES["a"], *BATCHES["b"]]
    assert judge_clear(ok, BATCHES, SEEDS, [clear, a, b]).mode == "serializable"


def test_clear_call_that_raises_is_a_violation() -> None:
    verdict = judge_clear([], BATCHES, SEEDS, [], ["clear 0 raised OperationalError: locked"])
    assert verdict.mode == "call_raised" and verdict.counts.raised == 1


# --- ARIB-ORDER-001 counting ---------------------------------------------------------------

ORDER_BATCHES = {"w0b0": [item("x0"), item("x1")], "w0b1": [item("x2"), item("x3")],
                 "w1b0": [item("y0"), item("y1")]}
OVERLAP = [Append("w0b0", 0, 0, 0, 3), Append("w1b0", 1, 0, 1, 4), Append("w0b1", 0, 1, 5, 6)]


def _flat(*names: str) -> list[Any]:
    return [i for n in names for i in ORDER_BATCHES[n]]


def test_order_interleaved_whole_batches_are_ordered() -> None:
    assert judge_order(_flat("w1b0", "w0b0", "w0b1"), ORDER_BATCHES, OVERLAP).mode == "ordered"
    assert judge_order(_flat("w0b0", "w1b0", "w0b1"), ORDER_BATCHES, OVERLAP).mode == "ordered"


def test_order_split_batch() -> None:
    seen = [ORDER_BATCHES["w0b0"][0], *ORDER_BATCHES["w1b0"], ORDER_BATCHES["w0b0"][1],
            *ORDER_BATCHES["w0b1"]]
    assert judge_order(seen, ORDER_BATCHES, OVERLAP).mode == "batch_split"


def test_order_writer_order_and_real_time_order() -> None:
    verdict = judge_order(_flat("w0b1", "w0b0", "w1b0"), ORDER_BATCHES, OVERLAP)
    assert verdict.mode == "writer_order"
    # w1b0 returned (t=4) before w0b1 began (t=5): it must be listed first.
    verdict = judge_order(_flat("w0b0", "w0b1", "w1b0"), ORDER_BATCHES, OVERLAP)
    assert verdict.mode == "real_time_order"


def test_order_lost_item_is_counted() -> None:
    verdict = judge_order(_flat("w0b0", "w1b0", "w0b1")[:-1], ORDER_BATCHES, OVERLAP)
    assert verdict.mode == "lossy" and verdict.counts.lost == 1


# --- ARIB-LIMIT-001 counting ---------------------------------------------------------------

HISTORY = [item(f"h{n}") for n in range(6)]
APPENDED = {f'{{"content":"h{n}","role":"user"}}': Stamp(2 * n, 2 * n + 1) for n in range(6)}


def test_limit_window_is_a_suffix_of_a_prefix() -> None:
    w = Window(0, 3, tuple(HISTORY[1:4]), Stamp(6, 7))
    assert window_problem(w, HISTORY, APPENDED) == (4, None)
    short = Window(0, 3, tuple(HISTORY[:2]), Stamp(2, 3))  # only 2 stored then
    assert window_problem(short, HISTORY, APPENDED) == (2, None)
    empty = Window(0, 3, (), Stamp(-1, 0))
    assert window_problem(empty, HISTORY, APPENDED) == (0, None)


def test_limit_window_too_long_too_short_or_torn() -> None:
    assert window_problem(Window(0, 2, tuple(HISTORY[1:4]), Stamp(6, 7)), HISTORY,
                          APPENDED)[1]
    assert window_problem(Window(0, 3, tuple(HISTORY[2:4]), Stamp(6, 7)), HISTORY,
                          APPENDED)[1]
    torn = (HISTORY[1], HISTORY[3])
    assert window_problem(Window(0, 2, torn, Stamp(6, 7)), HISTORY, APPENDED)[1]


def test_limit_window_must_respect_real_time() -> None:
    # h4's append returned at t=9 before this read began at t=10: the read must show it.
    stale = Window(0, 2, tuple(HISTORY[2:4]), Stamp(10, 11))
    assert "misses" in (window_problem(stale, HISTORY, APPENDED)[1] or "")
    # h5's append began at t=10, after this read returned at t=5: it cannot be shown.
    future = Window(0, 2, tuple(HISTORY[4:6]), Stamp(4, 5))
    assert "began later" in (window_problem(future, HISTORY, APPENDED)[1] or "")


def test_limit_judge_final_windows_and_going_back() -> None:
    finals = [(1, HISTORY[-1:]), (4, HISTORY[-4:]), (9, HISTORY)]
    ok = judge_limit(HISTORY, HISTORY, APPENDED, [], finals)
    assert ok.mode == "consistent" and ok.counts == Counts()
    assert judge_limit(HISTORY, HISTORY, APPENDED, [], [(2, HISTORY[:2])]).mode == "wrong_window"
    assert judge_limit(HISTORY, HISTORY, APPENDED, [], [(2, HISTORY[-2:][::-1])]).mode == (
        "wrong_window")
    newer = Window(0, 2, tuple(HISTORY[3:5]), Stamp(8, 9))
    older = Window(1, 2, tuple(HISTORY[2:4]), Stamp(9, 10))
    assert judge_limit(HISTORY, HISTORY, APPENDED, [newer], finals).mode == "consistent"
    went_back = Window(1, 2, tuple(HISTORY[2:4]), Stamp(10, 11))
    verdict = judge_limit(HISTORY, HISTORY, {}, [newer, went_back], finals)
    assert verdict.mode == "went_back"
    assert judge_limit(HISTORY, HISTORY, {}, [newer, older], finals).mode == "consistent"


def test_limit_lost_item_and_raising_read() -> None:
    verdict = judge_limit(HISTORY[:-1], HISTORY, APPENDED, [], [])
    assert verdict.mode == "lossy" and verdict.counts.lost == 1
    verdict = judge_limit(HISTORY, HISTORY, APPENDED, [], [], ["get_items raised X"])
    assert verdict.mode == "call_raised" and verdict.counts.raised == 1
