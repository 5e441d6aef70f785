"""The README's table of the LangGraph family's invariants is generated from its checks, in a
block of its own that the default family's `docs` leaves alone."""

from __future__ import annotations

from pathlib import Path

from arib.checks.registry import load_checks
from arib.docs import BEGIN, END, check_markers, render_readme

README = Path(__file__).resolve().parents[2] / "README.md"


def test_readme_table_is_current() -> None:
    text = README.read_text()
    assert render_readme(text, load_checks(), "langgraph") == text, \
        "run `python -m arib --family langgraph docs`"


def test_each_family_has_its_own_block() -> None:
    begin, end = check_markers("langgraph")
    assert (begin, end) != (BEGIN, END) and "langgraph" in begin and "langgraph" in end
    text = README.read_text()
    block = text.split(begin, 1)[1].split(end, 1)[0]
    for check in load_checks():
        assert f"| {check.id} | {check.invariant} |" in block
    default_block = text.split(BEGIN, 1)[1].split(END, 1)[0]
    assert "ARIB-LGCONC-002" not in default_block
