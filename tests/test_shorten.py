"""arib.ground.shorten: samples stay whole JSON values, shortened by structure."""

from __future__ import annotations

import json

import pytest

from arib.checks.common import first_differences, label
from arib.ground.shorten import join_within, short_json, short_text

ITEM = {"role": "user", "content": "x" * 300, "meta": {"tags": list(range(50)),
                                                       "nested": {"a": {"b": {"c": "deep"}}}}}


def test_a_short_value_is_its_canonical_json() -> None:
    assert short_json({"b": 1, "a": [1, 2]}) == '{"a":[1,2],"b":1}'


@pytest.mark.parametrize("limit", [24, 40, 64, 120, 400])
def test_a_long_value_is_still_one_json_value_within_the_limit(limit: int) -> None:
    text = short_json(ITEM, limit)
    assert len(text) <= limit
    shown = json.loads(text)  # whole and valid, never cut mid-string
    assert isinstance(shown, dict)


def test_what_is_left_out_is_said_inside_the_value() -> None:
    shown = json.loads(short_json(ITEM, 120))
    assert "…" in json.dumps(shown, ensure_ascii=False)
    long_list = json.loads(short_json(list(range(100)), 40))
    assert long_list[-1].startswith("…(+") and long_list[-1].endswith(" more)")
    assert json.loads(short_json("y" * 200, 40)).endswith("chars)")


def test_a_value_that_cannot_fit_is_as_short_as_it_goes_and_still_whole() -> None:
    assert json.loads(short_json(ITEM, 24)) == {"…": "+3 more keys"}
    assert json.loads(short_json(ITEM, 5)) == "{…3 keys}"


def test_short_text_marks_the_cut() -> None:
    assert short_text("abc", 5) == "abc"
    assert short_text("abcdefgh", 3) == "abc…(+5 chars)"


def test_join_within_keeps_whole_parts_and_counts_the_rest() -> None:
    parts = ["a" * 30, "b" * 30, "c" * 30, "d" * 30]
    assert join_within(parts, 200) == "; ".join(parts)
    joined = join_within(parts, 80)
    assert joined == f"{'a' * 30}; {'b' * 30}; (+2 more)" and len(joined) <= 80
    assert join_within(["z" * 500], 10) == "z" * 500  # the first part is never cut


def test_a_label_of_an_item_without_id_or_content_is_whole_json() -> None:
    item = {"type": "function_call_output", "output": "o" * 200, "call_id": None}
    text = label(item)
    assert len(text) <= 64 and json.loads(text)["type"] == "function_call_output"
    assert label({"role": "user", "content": "q" * 100}).endswith("…(+52 chars)'")


def test_first_differences_names_fewer_items_rather_than_cutting_one() -> None:
    expected = [{"role": "user", "content": f"{i:03d}" + "w" * 100} for i in range(20)]
    text = first_differences(expected, [])
    assert len(text) <= 400 and text.startswith("missing: ")
    assert text.endswith(" more)") and "(+" in text
    for name in text.removeprefix("missing: ").rsplit(" (+", 1)[0].split(", "):
        assert name.startswith("user '") and name.endswith("'")
