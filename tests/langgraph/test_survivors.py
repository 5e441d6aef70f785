"""The LangGraph family's survivors file against its committed survey: every generated
mutant no check kills is listed with its category and reason, and no line is stale."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from arib.survey.survivors import load_survivors, survey_disagreements, survivors_path
from arib.targets.langgraph.lanes import LANES

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


SURVIVORS = sorted((ROOT / "mutants" / "survivors").glob("langgraph-*.txt"))


@pytest.mark.parametrize("path", SURVIVORS, ids=[p.name for p in SURVIVORS])
def test_every_survivors_entry_names_a_mutant_today_s_generator_makes(path: Path) -> None:
    """Against the generator, not only the committed survey (which may be older than it): an
    entry naming a mutant no longer generated on its lane fails, naming the id and the line."""
    from arib.execute import sdk_version
    from arib.mutants.generate import generate
    from arib.targets.registry import get_target

    version = path.stem.removeprefix("langgraph-")
    if version != sdk_version():
        pytest.fail(f"{path.name} is of langgraph {version}, and this environment has "
                    f"{sdk_version()}: the survivors file of another version cannot be checked "
                    f"against its generator here; run its survey in its environment")
    entries = load_survivors(version, [lane.name for lane in LANES])
    made = {lane: {m.id for m in generate(get_target(lane)).mutants}
            for lane in sorted({e.lane for e in entries})}
    gone = [f"{e.where}: {e.lane} {e.mutant_id} is no longer generated on {e.lane}"
            for e in entries if e.mutant_id not in made[e.lane]]
    assert not gone, "\n".join(gone)
