"""Shards refused when they do not fit (arib.runs.shard); merged == unsharded on the toy family.

The slow test runs the commands of .github/workflows/shards.yml (the same argument lists, on
the toy family instead of openai-agents), as separate processes: the whole survey once,
then each shard, then ``merge``; the merged documents equal the unsharded ones on every
verdict, status and count (durations, run facts and the viewer's framework/system aside).
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

import pytest

try:
    import yaml
except ImportError:  # the locks install PyYAML's free-threading fork on Python 3.13
    import yaml_ft as yaml  # type: ignore[no-redef]

from arib.ground.errors import UsageError
from arib.runs.shard import check_compatible, load_shards
from tests.test_family import harness, toy_path  # noqa: F401 - the fixture is used below

ROOT = Path(__file__).resolve().parent.parent
WORKFLOW = ROOT / ".github" / "workflows" / "shards.yml"
N = 4


def survey_command(k: int | None) -> list[str]:
    """The survey the workflow's matrix runs, as shard ``k`` of ``N`` (None: unsharded)."""
    out = f"shard-{k}" if k else "whole"
    return ["survey", "--quiet", "--no-cache", "--write", "--out", out,
            *(["--shard", f"{k}/{N}"] if k else [])]


MERGE_COMMAND = ["merge", *(f"shard-{k}" for k in range(1, N + 1)), "--out", "merged"]


def _manifest(k: int, n: int = 2, **args: Any) -> dict[str, Any]:
    return {"kind": "arib-shard", "command": "survey", "shard": {
        "spec": f"{k}/{n}", "k": k, "n": n, "fingerprint": json.dumps(args, sort_keys=True),
        "arguments": args, "commit": "c", "durations": "d"}}


def test_a_missing_shard_is_refused_naming_it() -> None:
    with pytest.raises(UsageError, match=r"shard 2/3 is missing \(got 1/3, 3/3\).*exactly once"):
        check_compatible([_manifest(1, 3), _manifest(3, 3)], ["a", "b"])


def test_a_shard_given_twice_is_refused_naming_it() -> None:
    with pytest.raises(UsageError, match=r"shard 1/2 is given twice"):
        check_compatible([_manifest(1), _manifest(1), _manifest(2)], ["a", "b", "c"])


def test_shards_of_another_n_are_refused() -> None:
    with pytest.raises(UsageError, match=r"shard 'b' has n 3 but 'a' has 2"):
        check_compatible([_manifest(1), _manifest(2, 3)], ["a", "b"])


def test_shards_with_other_arguments_are_refused_naming_the_difference() -> None:
    with pytest.raises(UsageError, match=r"other arguments .*seed=1 vs 0.*same arguments"):
        check_compatible([_manifest(1, seed=0), _manifest(2, seed=1)], ["a", "b"])


def test_shards_of_other_durations_are_refused() -> None:
    other = _manifest(2)
    other["shard"]["durations"] = "e"
    with pytest.raises(UsageError, match=r"shard 'b' has recorded durations 'e' but 'a' has"):
        check_compatible([_manifest(1), other], ["a", "b"])


@pytest.mark.parametrize(("key", "what"), [
    ("family", "family"), ("version", "version of the family's distribution"),
    ("lock", "lock hash"), ("commit", "harness commit")])
def test_a_shard_that_measured_something_else_is_refused_naming_it(key: str,
                                                                   what: str) -> None:
    first, other = _manifest(1), _manifest(2)
    first["shard"].update(family="f", version="1.0", lock="l1")
    other["shard"].update(family="f", version="1.0", lock="l1")
    other["shard"][key] = "other"
    with pytest.raises(UsageError) as caught:
        check_compatible([first, other], ["a", "b"])
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(f"shard 'b' has {what} 'other' but 'a' has ")
    assert "the rule: merged shards measured the same family version" in message
    assert "fix: run shard 2/2 again in the environment of 'a'" in message


def test_merge_refuses_a_shard_of_another_version_with_exit_2(tmp_path: Path) -> None:
    """Two toy shards, the second made on version 0.2 of the toy distribution: exit 2, one
    line naming both versions, and nothing written."""
    from tests.test_family import install_entry_point

    for k, version in ((1, "0.1"), (2, "0.2")):
        env = install_entry_point(tmp_path / f"v{version}", "toy-notes", "arib_toy:FAMILY")
        (env / "arib_toy-0.1.dist-info" / "METADATA").write_text(
            f"Metadata-Version: 2.1\nName: arib-toy\nVersion: {version}\n")
        run = harness(env, "survey", "--quiet", "--no-cache", "--write", "--out",
                      str(tmp_path / f"s{k}"), "--shard", f"{k}/2")
        assert run.returncode == 0, run.stdout + run.stderr
    merged = harness(tmp_path / "v0.1", "merge", str(tmp_path / "s1"), str(tmp_path / "s2"),
                     "--out", str(tmp_path / "merged"))
    assert merged.returncode == 2, merged.stdout + merged.stderr
    errors = merged.stderr.strip().splitlines()
    assert len(errors) == 1 and "has version of the family's distribution '0.2'" in errors[0]
    assert "'0.1'" in errors[0], errors
    assert not (tmp_path / "merged").exists() or not any((tmp_path / "merged").iterdir())


def test_a_folder_without_a_manifest_is_refused(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"holds no shard.json.*--shard k/n --write"):
        load_shards([tmp_path])


def _runs(job: dict[str, Any], shard: int = 0) -> list[list[str]]:
    """The ``python -m arib`` argument lists of a job's steps, for matrix entry ``shard``."""
    return [shlex.split(step["run"].replace("${{ matrix.shard }}", str(shard)))[3:]
            for step in job["steps"] if step.get("run", "").startswith("python -m arib ")]


def test_the_workflow_runs_the_commands_this_test_runs() -> None:
    workflow = yaml.safe_load(WORKFLOW.read_text())
    survey, merge = workflow["jobs"]["survey"], workflow["jobs"]["merge"]
    shards = survey["strategy"]["matrix"]["shard"]
    assert shards == list(range(1, N + 1))
    for k in shards:
        assert _runs(survey, k) == [survey_command(k)]
    assert _runs(merge) == [MERGE_COMMAND] and merge["needs"] == "survey"
    uploads = [s for s in survey["steps"] if s.get("uses", "").startswith(
        "actions/upload-artifact")]
    assert uploads[0]["with"]["path"] == "shard-${{ matrix.shard }}/"


def _stripped(value: Any) -> Any:
    """``value`` without what differs from run to run: durations, run facts, environment."""
    if isinstance(value, dict):
        return {k: _stripped(v) for k, v in value.items()
                if k not in {"duration_s", "duration", "run", "framework", "system"}}
    if isinstance(value, list):
        return [_stripped(v) for v in value]
    return value


@pytest.mark.slow
def test_merged_shards_equal_the_unsharded_survey(toy_path: Path) -> None:  # noqa: F811
    whole = harness(toy_path, *survey_command(None))
    assert whole.returncode == 0, whole.stdout + whole.stderr
    for k in range(1, N + 1):
        shard = harness(toy_path, *survey_command(k))
        assert shard.returncode == 0, shard.stdout + shard.stderr
        assert f"shard {k}/{N}" in shard.stdout
    parts = [json.loads((toy_path / f"shard-{k}" / "notes-file.json").read_text())
             for k in range(1, N + 1) if (toy_path / f"shard-{k}" / "notes-file.json").exists()]
    assert len(parts) > 1 and all(len(p["outcomes"]) < 6 for p in parts)  # really split
    merged = harness(toy_path, *MERGE_COMMAND)
    assert merged.returncode == 0, merged.stdout + merged.stderr
    names = sorted(p.name for p in (toy_path / "whole").iterdir())
    assert names == ["mutation-report.json", "notes-file.json", "toy-reference.json"]
    assert sorted(p.name for p in (toy_path / "merged").iterdir()) == names
    for name in names:
        want = json.loads((toy_path / "whole" / name).read_text())
        got = json.loads((toy_path / "merged" / name).read_text())
        assert _stripped(got) == _stripped(want), name
    lane = json.loads((toy_path / "merged" / "notes-file.json").read_text())
    assert lane["run"]["merged_shards"] == N and lane["scores"]["killed"] >= 3


@pytest.mark.slow
def test_merge_refuses_a_shard_run_with_other_arguments(toy_path: Path) -> None:  # noqa: F811
    for k, seed in ((1, "0"), (2, "1")):
        done = harness(toy_path, *survey_command(k)[:-1], f"{k}/2", "--seed", seed)
        assert done.returncode == 0, done.stdout + done.stderr
    refused = harness(toy_path, "merge", "shard-1", "shard-2", "--out", "merged")
    assert refused.returncode == 2
    assert "other arguments" in refused.stderr and "seed=1 vs 0" in refused.stderr
    assert not (toy_path / "merged" / "notes-file.json").exists()


@pytest.mark.slow
def test_merged_admission_shards_equal_the_unsharded_admission(toy_path: Path) -> None:  # noqa: F811
    command = ["admit", "--all", "--quiet", "--no-cache", "--json"]
    whole = harness(toy_path, *command, "whole.json")
    assert whole.returncode == 0, whole.stdout + whole.stderr
    for k in (1, 2):
        shard = harness(toy_path, *command, f"admit-{k}.json", "--shard", f"{k}/2")
        assert shard.returncode == 0, shard.stdout + shard.stderr
    sizes = [len(json.loads((toy_path / f"admit-{k}.json").read_text())["admissions"])
             for k in (1, 2)]
    assert sorted(sizes) == [0, 1]  # the toy family's one check went to one shard
    merged = harness(toy_path, "merge", "admit-1.json", "admit-2.json", "--out", "merged")
    assert merged.returncode == 0, merged.stdout + merged.stderr
    want = json.loads((toy_path / "whole.json").read_text())
    got = json.loads((toy_path / "merged" / "admission.json").read_text())
    assert got.pop("merged_shards") == 2
    assert _stripped(got) == _stripped(want)
    assert [(a["check_id"], a["admitted"]) for a in got["admissions"]] == [
        ("ARIB-TOY-001", True)]
    missing = harness(toy_path, "merge", "admit-2.json", "--out", "merged")
    assert missing.returncode == 2 and "shard 1/2 is missing" in missing.stderr


@pytest.mark.slow
def test_merged_bench_shards_equal_the_unsharded_bench(toy_path: Path) -> None:  # noqa: F811
    command = ["bench", "--quiet", "--no-cache"]
    whole = harness(toy_path, *command, "--out", "whole")
    assert whole.returncode == 0, whole.stdout + whole.stderr
    shards = []
    for k in (1, 2):
        harness(toy_path, *command, "--out", f"bench-{k}", "--shard", f"{k}/2")
        (path,) = (toy_path / f"bench-{k}").glob("*.json")  # a shard with no cell: exit 4
        shards.append(str(path.relative_to(toy_path)))
        assert json.loads(path.read_text())["coverage"]["partial"] is True  # never a baseline
    merged = harness(toy_path, "merge", *shards, "--out", "merged")
    assert merged.returncode == 0, merged.stdout + merged.stderr
    (want_path,) = (toy_path / "whole").glob("*.json")
    (got_path,) = (toy_path / "merged").glob("*-toy-notes-0.1.json")
    want, got = json.loads(want_path.read_text()), json.loads(got_path.read_text())
    assert got.pop("merged_shards") == 2
    varying = ("started", "run_id", "duration_s", "environment", "harness_commit", "run",
               "startup")
    for doc in (want, got):
        for key in varying:
            doc.pop(key, None)
    assert _stripped(got) == _stripped(want)
    assert [(f["target"], f["verdict"]) for f in got["findings"]] == [("notes-file", "held")]
    assert got_path.with_suffix(".md").read_text().count("ARIB-TOY-001") >= 1


def test_an_admission_merge_missing_a_check_is_refused(tmp_path: Path) -> None:
    from arib.runs.merge import merge_admissions

    paths = []
    for k, admissions in ((1, [{"check_id": "ARIB-A-001", "admitted": True}]), (2, [])):
        doc = {**_manifest(k), "command": "admit", "kind": "arib-admission",
               "checks": ["ARIB-A-001", "ARIB-B-001"], "admissions": admissions}
        path = tmp_path / f"admit-{k}.json"
        path.write_text(json.dumps(doc))
        paths.append(path)
    with pytest.raises(UsageError, match=r"no shard admitted 'ARIB-B-001'"):
        merge_admissions(paths, tmp_path)
    assert not (tmp_path / "admission.json").exists()


def test_a_merged_bench_names_the_cells_no_shard_measured_in_their_one_form() -> None:
    from arib.runs.merge import _bench_gaps

    docs = [{"coverage": {"complete": True}, "admission": [{"check_id": "ARIB-X-001",
                                                            "admitted": True}]}]
    findings = [{"invariant_id": "ARIB-X-001", "target": "a-lane"}]
    gaps = _bench_gaps(docs, findings, ["ARIB-X-001"], ["a-lane", "b-lane"])
    assert gaps == ["1 cell(s) have no finding in any shard: ARIB-X-001 on b-lane"]
    assert _bench_gaps(docs, findings, ["ARIB-X-001"], ["a-lane"]) == []
