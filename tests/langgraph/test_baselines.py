"""The LangGraph family's committed baselines are whole (the openai-agents family's:
tests/test_baseline.py): a cell for every check admitted and lane measured on its version, in
the run it was accepted from and in the newest run committed, and accepted with today's
definition of every check; else `nox -s bench -- --family langgraph` on a fresh clone gates on
cells `new` (the baseline of cp1.0.12+sq1.0.4+pg1.0.9 lacked ARIB-LGSETUP-001's 9 cells)."""

from __future__ import annotations

from pathlib import Path

import pytest

from arib.runs.baseline import committed_gaps

ROOT = Path(__file__).resolve().parents[2]
COMMITTED = sorted((ROOT / "results" / "baselines").glob("langgraph-*.json"))


@pytest.mark.parametrize("path", COMMITTED, ids=[p.name for p in COMMITTED])
def test_a_committed_baseline_is_whole(path: Path) -> None:
    problems = committed_gaps(path, ROOT / "results")
    assert not problems, f"{path.name}:\n" + "\n".join(problems)
