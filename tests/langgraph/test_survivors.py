"""The LangGraph family's survivors file against its committed survey: every generated
mutant no check kills is listed with its category and reason, and no line is stale."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.survivors import load_survivors, survey_disagreements, survivors_path
from targets.langgraph.lanes import LANES

ROOT = Path(__file__).resolve().parents[2]
SURVEYS = sorted((ROOT / "results" / "survey").glob("langgraph-*"))


@pytest.mark.parametrize("folder", SURVEYS, ids=[f.name for f in SURVEYS])
def test_the_survivors_file_agrees_with_the_committed_survey(folder: Path) -> None:
    version = folder.name.removeprefix("langgraph-")
    assert survivors_path(version).is_file(), (
        f"the LangGraph survey {folder.name} is committed, but not its survivors file "
        f"{survivors_path(version)}")
    entries = load_survivors(version, [lane.name for lane in LANES])  # a bad line fails here
    docs = [json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))
            if p.name != "mutation-report.json"]
    assert docs and entries
    problems = survey_disagreements(entries, docs)
    assert not problems, "\n".join(problems)
