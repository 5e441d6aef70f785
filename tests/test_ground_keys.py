"""arib.ground.keys: each key type is a frozen ordered value with one string form and a parse()."""

from __future__ import annotations

import pytest

from arib.ground.errors import UsageError
from arib.ground.keys import Cell, MutantKey, Pair

KEY = MutantKey("sqlite-file", "m-0123456789ab")


@pytest.mark.parametrize("kind, first, second, other", [
    (MutantKey, "lane", "mutant_id", Cell), (Cell, "check_id", "lane", MutantKey)])
def test_a_key_is_a_frozen_hashable_value_ordered_by_its_fields(kind, first, second, other):
    key = kind("a", "m-1")
    assert (getattr(key, first), getattr(key, second)) == ("a", "m-1")
    assert key == kind("a", "m-1") and hash(key) == hash(kind("a", "m-1"))
    assert key != kind("b", "m-1") and key != kind("a", "m-2")
    assert {key: 1}[kind("a", "m-1")] == 1 and len({key, kind("a", "m-1")}) == 1
    assert key != ("a", "m-1")  # a tuple is no key
    assert key != other("a", "m-1")  # nor is the key of another concept
    with pytest.raises(AttributeError):
        setattr(key, second, "other")
    unsorted = [kind("b", "m-1"), kind("a", "m-2"), kind("a", "m-1")]
    assert sorted(unsorted) == [kind("a", "m-1"), kind("a", "m-2"), kind("b", "m-1")]
    assert kind("a", "m-9") < kind("b", "m-0") and not kind("b", "m-0") < kind("a", "m-9")


def test_lanes_built_on_one_module_share_a_mutant_id_never_a_key():
    one, twin = MutantKey("sqlite-file", "m-5f3f"), MutantKey("sqlalchemy-sqlite-file", "m-5f3f")
    assert one != twin and len({one, twin}) == 2


def test_mutant_key_has_one_string_form_and_parses_it_back():
    assert str(KEY) == f"{KEY}" == "sqlite-file:m-0123456789ab"
    assert MutantKey.parse("sqlite-file:m-0123456789ab") == KEY
    assert KEY.to_json() == {"lane": "sqlite-file", "mutant_id": "m-0123456789ab"}
    assert not hasattr(KEY, "report_id")  # the report's ids are str(key) too


def test_cell_has_one_string_form_and_parses_it_back():
    cell = Cell("ARIB-CONC-001", "sqlite-file")
    assert str(cell) == "ARIB-CONC-001 on sqlite-file"
    assert Cell.parse(str(cell)) == cell
    assert cell.to_json() == {"check_id": "ARIB-CONC-001", "lane": "sqlite-file"}
    assert Cell.of({"invariant_id": "ARIB-CONC-001", "target": "sqlite-file"}) == cell


def test_a_pair_is_a_check_on_a_mutant_key():
    pair = Pair("ARIB-CONC-001", KEY)
    assert str(pair) == "ARIB-CONC-001 on sqlite-file:m-0123456789ab"
    assert Pair.parse(str(pair)) == pair
    assert pair.cell == Cell("ARIB-CONC-001", "sqlite-file")
    assert pair.to_json() == {"check_id": "ARIB-CONC-001", "lane": "sqlite-file",
                              "mutant_id": "m-0123456789ab"}
    assert pair != ("ARIB-CONC-001", KEY) and {pair: 1}[Pair("ARIB-CONC-001", KEY)] == 1
    assert sorted([Pair("B", KEY), Pair("A", MutantKey("z", "m")), Pair("A", KEY)]) == [
        Pair("A", KEY), Pair("A", MutantKey("z", "m")), Pair("B", KEY)]


# What each form refuses: another key's form, the retired spellings, empty parts.
BAD = [
    (MutantKey, "m-0123456789ab@sqlite-file", "lane:mutant_id"),  # the retired report id
    (MutantKey, "sqlite-file", "lane:mutant_id"),
    (MutantKey, ":m-1", "lane:mutant_id"),
    (MutantKey, "sqlite-file:", "lane:mutant_id"),
    (MutantKey, "ARIB-CONC-001 on sqlite-file", "lane:mutant_id"),
    (Cell, "ARIB-CONC-001@sqlite-file", "check_id on lane"),  # the retired shard key
    (Cell, "ARIB-CONC-001 on ", "check_id on lane"),
    (Cell, "ARIB-CONC-001 on sqlite-file:m-1", "check_id on lane"),  # a pair, not a cell
    (Pair, "ARIB-CONC-001 on sqlite-file", "check_id on lane:mutant_id"),  # a cell
    (Pair, "ARIB-CONC-001 on m-1@sqlite-file", "check_id on lane:mutant_id"),
]


@pytest.mark.parametrize("kind, text, form", BAD)
def test_parse_refuses_other_forms_naming_the_text_the_form_and_an_example(kind, text, form):
    with pytest.raises(UsageError) as caught:
        kind.parse(text)
    message = str(caught.value)
    assert repr(text) in message and form in message and repr(kind.EXAMPLE) in message


@pytest.mark.parametrize("make", [
    lambda: MutantKey("a:b", "m-1"),  # str() could not be parsed back
    lambda: MutantKey("lane", "m 1"),
    lambda: MutantKey("", "m-1"),
    lambda: Cell("ARIB CONC", "lane"),
    lambda: Cell("ARIB-CONC-001", "a:b"),
    lambda: Pair("ARIB-CONC-001", "sqlite-file:m-1"),  # type: ignore[arg-type]
])
def test_a_key_whose_string_form_would_be_ambiguous_cannot_be_made(make):
    with pytest.raises(UsageError, match="the rule"):
        make()
