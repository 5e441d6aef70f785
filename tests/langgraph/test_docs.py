"""The LangGraph family's tables in the documentation pages (its invariants in
checks/README.md, its newest runs in results/README.md) are generated from its checks and its
committed runs, in blocks of their own that the default family's `docs` leaves alone."""

from __future__ import annotations

from pathlib import Path

from arib.checks.registry import load_checks
from arib.dev.docs import (
    BEGIN,
    CHECKS_PAGE,
    END,
    RUNS_BEGIN,
    RUNS_END,
    RUNS_PAGE,
    check_markers,
    newest_runs,
    render_pages,
    runs_markers,
)

ROOT = Path(__file__).resolve().parents[2]


def test_pages_are_current() -> None:
    for page, text in render_pages(ROOT, load_checks(), "langgraph").items():
        assert text == (ROOT / page).read_text(), \
            f"{page}: run `python -m arib --family langgraph docs`"


def test_each_family_has_its_own_block() -> None:
    begin, end = check_markers("langgraph")
    assert (begin, end) != (BEGIN, END) and "langgraph" in begin and "langgraph" in end
    text = (ROOT / CHECKS_PAGE).read_text()
    block = text.split(begin, 1)[1].split(end, 1)[0]
    for check in load_checks():
        assert f"| {check.id} | {check.invariant} |" in block
    default_block = text.split(BEGIN, 1)[1].split(END, 1)[0]
    assert "ARIB-LGCONC-002" not in default_block


def test_each_family_has_its_own_runs() -> None:
    begin, end = runs_markers("langgraph")
    assert (begin, end) != (RUNS_BEGIN, RUNS_END)
    text = (ROOT / RUNS_PAGE).read_text()
    block = text.split(begin, 1)[1].split(end, 1)[0]
    documents = newest_runs(ROOT / "results")
    assert documents and all(d["_path"] in block for d in documents)
    default_block = text.split(RUNS_BEGIN, 1)[1].split(RUNS_END, 1)[0]
    assert "langgraph-" not in default_block
