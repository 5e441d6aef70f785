"""arib.runs.partial_write: a survey that measured less never replaces one that measured more.

Small fixture documents in a temporary folder stand in for a committed survey: two lanes,
two checks each. No committed result is read or written.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from arib.runs.partial_write import (
    PARTIAL_DIR,
    REPORT,
    committed_lanes,
    document_shrink,
    shrink,
    write_lanes,
)

CHECKS = ("ARIB-A-001", "ARIB-B-001")


def lane_doc(lane: str, checks: tuple[str, ...] = CHECKS, error: str | None = None,
             tag: str = "old") -> dict[str, Any]:
    return {"kind": "arib-survey", "lane": lane, "tag": tag, "error": error,
            "clean": {c: {"verdicts": ["held"]} for c in checks}}


def report(lanes: tuple[str, ...], tag: str = "old") -> dict[str, Any]:
    mutant = {"id": "m-1", "mutatorName": tag, "status": "Killed", "coveredBy": ["ARIB-A-001"],
              "location": {"start": {"line": 1, "column": 1}, "end": {"line": 1, "column": 2}}}
    return {"schemaVersion": "2", "thresholds": {"high": 90, "low": 80},
            "files": {f"{lane}/m.py": {"language": "python", "source": "x = 1\n",
                                       "mutants": [dict(mutant, id=f"m-1@{lane}")]}
                      for lane in lanes}}


def committed(folder: Path, lanes: tuple[str, ...] = ("one", "two")) -> dict[str, str]:
    """A whole survey in ``folder``; returns each file's text, to compare after."""
    folder.mkdir(parents=True, exist_ok=True)
    for lane in lanes:
        (folder / f"{lane}.json").write_text(json.dumps(lane_doc(lane)))
    (folder / REPORT).write_text(json.dumps(report(lanes)))
    return {p.name: p.read_text() for p in folder.iterdir() if p.is_file()}


def test_a_survey_of_every_lane_and_check_replaces_the_folder(tmp_path: Path) -> None:
    committed(tmp_path)
    written = write_lanes(tmp_path, [lane_doc("one", tag="new"), lane_doc("two", tag="new")],
                          report(("one", "two"), "new"), merge=False)
    assert written.lines == ()
    assert {p.name for p in written.paths} == {"one.json", "two.json", REPORT}
    assert {d["tag"] for d in committed_lanes(tmp_path).values()} == {"new"}


def test_an_empty_folder_takes_any_survey(tmp_path: Path) -> None:
    written = write_lanes(tmp_path / "new", [lane_doc("one", ("ARIB-A-001",))],
                          report(("one",)), merge=False)
    assert written.lines == () and (tmp_path / "new" / "one.json").is_file()


def test_fewer_lanes_are_written_beside_marked_partial(tmp_path: Path) -> None:
    before = committed(tmp_path)
    written = write_lanes(tmp_path, [lane_doc("one", tag="new")], report(("one",), "new"),
                          merge=False)
    after = {p.name: p.read_text() for p in tmp_path.iterdir() if p.is_file()}
    assert after == before  # the committed survey shrank by nothing
    beside = written.paths[0].parent
    assert beside.parent == tmp_path / PARTIAL_DIR
    doc = json.loads((beside / "one.json").read_text())
    assert doc["partial"]["missing_lanes"] == ["two"] and doc["partial"]["of"] == str(tmp_path)
    assert list(json.loads((beside / REPORT).read_text())["files"]) == ["one/m.py"]
    assert any("1 lane(s) not measured (two)" in line and "--partial" in line
               for line in written.lines)


def test_fewer_checks_on_a_lane_are_written_beside(tmp_path: Path) -> None:
    before = committed(tmp_path)
    docs = [lane_doc("one", ("ARIB-A-001",), tag="new"), lane_doc("two", tag="new")]
    written = write_lanes(tmp_path, docs, report(("one", "two"), "new"), merge=False)
    assert {p.name: p.read_text() for p in tmp_path.iterdir() if p.is_file()} == before
    assert "one without 1 check(s) (ARIB-B-001)" in written.lines[0]


def test_a_lane_error_does_not_replace_a_lane_that_was_ok(tmp_path: Path) -> None:
    before = committed(tmp_path)
    docs = [lane_doc("one", tag="new", error="boom"), lane_doc("two", tag="new")]
    assert shrink(committed_lanes(tmp_path), {d["lane"]: d for d in docs}).errored == ("one",)
    write_lanes(tmp_path, docs, report(("one", "two"), "new"), merge=False)
    assert {p.name: p.read_text() for p in tmp_path.iterdir() if p.is_file()} == before


def test_partial_merges_whole_lanes_and_keeps_the_others(tmp_path: Path) -> None:
    committed(tmp_path, ("one", "two", "three"))
    docs = [lane_doc("one", tag="new"), lane_doc("two", ("ARIB-A-001",), tag="new")]
    written = write_lanes(tmp_path, docs, report(("one", "two"), "new"), merge=True)
    lanes = committed_lanes(tmp_path)
    assert {k: d["tag"] for k, d in lanes.items()} == {"one": "new", "two": "old",
                                                       "three": "old"}
    files = json.loads((tmp_path / REPORT).read_text())["files"]
    assert {k: f["mutants"][0]["mutatorName"] for k, f in files.items()} == {
        "one/m.py": "new", "two/m.py": "old", "three/m.py": "old"}
    # the lane measured short went beside, not into the folder
    beside = [p for p in written.paths if PARTIAL_DIR in p.parts]
    assert [p.name for p in beside] == ["two.json", REPORT]
    assert any("one replaced" in line for line in written.lines)
    assert any("never merged" in line for line in written.lines)


def test_a_survey_of_one_lane_leaves_the_whole_survey_as_it_was(tmp_path: Path) -> None:
    """The toy family surveyed whole, then one lane of it with --write to the same folder:
    the folder's files are unchanged, the lane goes beside; with --partial it is merged."""
    from tests.test_family import harness, install_entry_point

    env = install_entry_point(tmp_path / "env", "toy-notes", "arib_toy:FAMILY")
    out = tmp_path / "survey"
    whole = harness(env, "survey", "--quiet", "--no-cache", "--write", "--out", str(out))
    assert whole.returncode == 0, whole.stdout + whole.stderr
    before = {p.name: p.read_text() for p in out.iterdir() if p.is_file()}
    assert len(json.loads(before[REPORT])["files"]) == 2
    one = harness(env, "survey", "--quiet", "--no-cache", "--write", "--out", str(out),
                  "--lanes", "notes-file")
    assert one.returncode == 0, one.stdout + one.stderr
    assert {p.name: p.read_text() for p in out.iterdir() if p.is_file()} == before
    assert "marked partial" in one.stdout and f"{out}: unchanged" in one.stdout
    merged = harness(env, "survey", "--quiet", "--no-cache", "--write", "--out", str(out),
                     "--lanes", "notes-file", "--partial")
    assert merged.returncode == 0, merged.stdout + merged.stderr
    assert len(json.loads((out / REPORT).read_text())["files"]) == 2
    assert committed_lanes(out).keys() == {"toy-reference", "notes-file"}
    refused = harness(env, "survey", "--quiet", "--partial", "--lanes", "notes-file")
    assert refused.returncode == 2 and "--partial without --write" in refused.stderr


def test_official_tables_of_fewer_lanes_go_beside(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    from arib.official.command import _write

    def table(*lanes: str) -> dict[str, Any]:
        return {"kind": "arib-official-side-by-side", "lanes": [{"lane": n} for n in lanes]}

    _write(tmp_path, "v-side-by-side", table("a", "b"), "# whole\n")
    before = (tmp_path / "v-side-by-side.json").read_text()
    paths = _write(tmp_path, "v-side-by-side", table("a"), "# one lane\n")
    assert (tmp_path / "v-side-by-side.json").read_text() == before
    assert (tmp_path / "v-side-by-side.md").read_text() == "# whole\n"
    assert paths[0].parent.parent == tmp_path / PARTIAL_DIR
    doc = json.loads(paths[0].read_text())
    assert doc["partial"]["reason"] == "without 1 of its lanes (b)"
    assert "marked partial" in capsys.readouterr().out
    mutants = {"kind": "arib-official-mutants", "lanes": [{"lane": "a"}], "our_checks": ["X"]}
    _write(tmp_path, "v-mutants", {**mutants, "our_checks": ["X", "Y"]}, "")
    assert document_shrink(json.loads((tmp_path / "v-mutants.json").read_text()),
                           mutants) == "without 1 of its our checks (Y)"
    _write(tmp_path, "v-side-by-side", table("a", "b", "c"), "# more\n")
    assert (tmp_path / "v-side-by-side.md").read_text() == "# more\n"
