"""The survivors file: its parser, its agreement rules, and the committed file against the
committed survey."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from arib.survey.engine import SURVEY_ENGINE
from arib.survey.survivors import (
    SURVIVORS_DIR,
    Category,
    SurvivorsFileError,
    disagreements,
    load_survivors,
    parse_survivors,
    survey_disagreements,
    survivors_path,
)
from arib.targets.openai_agents.lanes import ALL_TARGETS

LANES = [t.name for t in ALL_TARGETS]
ROOT = Path(__file__).resolve().parent.parent
GOOD = """\
# a comment, then a blank line

sqlite-file m-5f3f4d26671a equivalent the lock only orders table creation, done once
reference   m-bfcb2c0678de blind-spot   no check closes a session while a read is in flight
"""


def test_a_good_file_parses() -> None:
    first, second = parse_survivors(GOOD, LANES)
    assert (first.lane, first.mutant_id, first.category, first.line) == (
        "sqlite-file", "m-5f3f4d26671a", Category.EQUIVALENT, 3)
    assert first.reason == "the lock only orders table creation, done once"
    assert second.category is Category.BLIND_SPOT and second.line == 4
    assert second.to_json()["category"] == "blind-spot"


@pytest.mark.parametrize("line, message", [
    ("sqlite-file m-5f3f4d26671a equivalent", "has 3 field"),
    ("no-such-lane m-5f3f4d26671a dead reason", "unknown lane 'no-such-lane'"),
    ("sqlite-file m-5f3f4d26671a wrong a reason", "unknown category 'wrong'"),
    ("sqlite-file 5f3f4d26671a dead a reason", "'5f3f4d26671a' is not a generated mutant id"),
    ("sqlite-file m-5f3f4d26671a dead again\nsqlite-file m-5f3f4d26671a dead twice",
     "listed already on line 1"),
])
def test_a_malformed_line_is_an_error_naming_it(line: str, message: str) -> None:
    with pytest.raises(SurvivorsFileError, match=message) as caught:
        parse_survivors(line, LANES, source="f.txt")
    assert "f.txt, line " in str(caught.value)
    assert int(caught.value.exit_code) == 2


def test_disagreements_name_each_id() -> None:
    entries = parse_survivors(
        "sqlite-file m-000000000001 blind-spot still a survivor\n"
        "sqlite-file m-000000000002 dead gone from the generator\n"
        "sqlite-file m-000000000003 unreachable killed now\n"
        "sqlite-file m-000000000004 equivalent waived, so equivalent\n"
        "sqlite-file m-000000000005 dead the compiler found it a duplicate\n"
        "reference m-000000000009 dead another lane's line\n", LANES)
    outcomes = {
        "m-000000000001": ("survived", False),
        "m-000000000003": ("killed", False),
        "m-000000000004": ("equivalent", True),
        "m-000000000005": ("duplicate", False),
        "m-000000000006": ("no_coverage", False),
        "m-000000000007": ("killed", False),
    }
    problems = disagreements("sqlite-file", entries, outcomes)
    assert len(problems) == 4, problems
    assert "line 2: sqlite-file m-000000000002 is no longer generated" in problems[0]
    assert "line 3: sqlite-file m-000000000003 is no longer a survivor (it is killed" in \
        problems[1]
    assert "line 5: sqlite-file m-000000000005 is no longer a survivor (it is duplicate" in \
        problems[2]
    assert problems[3] == ("sqlite-file m-000000000006 (no_coverage) is not listed in the "
                           "survivors file")


def test_a_version_without_a_file_has_no_entries(tmp_path: Path) -> None:
    assert load_survivors("9.9.9", LANES, root=tmp_path) == ()
    (tmp_path / "openai-agents-9.9.9.txt").write_text(GOOD)
    assert len(load_survivors("9.9.9", LANES, root=tmp_path)) == 2


def _committed_surveys() -> list[tuple[str, Path]]:
    out = []
    for folder in sorted((ROOT / "results" / "survey").glob("openai-agents-*")):
        out.append((folder.name.removeprefix("openai-agents-"), folder))
    return out


@pytest.mark.parametrize("sdk, folder", _committed_surveys(),
                         ids=[sdk for sdk, _ in _committed_surveys()])
def test_the_committed_survivors_file_agrees_with_the_committed_survey(sdk: str,
                                                                       folder: Path) -> None:
    entries = load_survivors(sdk, LANES)  # parses the committed file: a bad line fails here
    docs = [json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))
            if p.name != "mutation-report.json"]
    engines = {doc.get("engine", 1) for doc in docs}
    if engines != {SURVEY_ENGINE}:
        pytest.skip(f"the committed survey of openai-agents {sdk} was produced by survey "
                    f"engine {sorted(engines)} (before coverage, equivalence and the "
                    f"survivors file); the agreement is checked once a survey of engine "
                    f"{SURVEY_ENGINE} is committed")
    assert survivors_path(sdk).is_file(), (
        f"the survey of openai-agents {sdk} is committed, but not its survivors file "
        f"{survivors_path(sdk)}")
    problems = survey_disagreements(entries, docs)
    assert not problems, "\n".join(problems)


def test_every_committed_file_is_well_formed() -> None:
    files = sorted(SURVIVORS_DIR.glob("openai-agents-*.txt"))
    assert files, "at least the pinned version has a survivors file"
    for path in files:
        sdk = path.stem.removeprefix("openai-agents-")
        load_survivors(sdk, LANES)  # raises on a malformed line
        text = path.read_text()
        assert "LANE  MUTANT-ID  CATEGORY  REASON" in text  # the format is documented on top


def test_every_listed_mutant_of_the_installed_version_is_still_generated() -> None:
    from arib.execute import sdk_version
    from arib.mutants.pool import generated_for_lane

    missing = [f"{e.where}: {e.lane} {e.mutant_id}"
               for e in load_survivors(sdk_version(), LANES)
               if e.mutant_id not in {m.id for m in generated_for_lane(e.lane).mutants}]
    assert not missing, "no longer generated: " + "; ".join(missing)
