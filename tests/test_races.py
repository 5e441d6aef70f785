"""The race corpus: which rows and findings are selected, from small fixture documents, and
the committed corpus is what the tool selects from the committed results."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from arib.ground.errors import ResultsError
from arib.races.corpus import (
    Entry,
    EntryKind,
    Source,
    corpus_document,
    head_commit,
    load_committed_sources,
    load_sources,
    read_corpus,
    sampled_reason,
    select,
)

ROOT = Path(__file__).resolve().parent.parent


def row(mutant: str, runs: list[str], evidence: str = "", status: str = "killed",
        kind: str = "generated", check: str = "C-1", target: str = "lane-a") -> dict[str, Any]:
    return {"check_id": check, "mutant_id": mutant, "kind": kind, "target": target,
            "status": status, "runs": runs, "evidence": evidence}


def run_file(started: str, version: str, rows: list[dict[str, Any]],
             findings: Sequence[dict[str, Any]] = (), checks: Sequence[dict[str, Any]] = (),
             family: str = "fam") -> dict[str, Any]:
    return {"kind": "arib-bench-run", "sdk": {"name": family, "version": version},
            "started": started, "admission": [{"check_id": "C-1", "results": rows}],
            "findings": list(findings), "checks": list(checks)}


def finding(check: str, lane: str, trials: int, bad: int) -> dict[str, Any]:
    return {"invariant_id": check, "target": lane, "trials": trials, "violating_trials": bad}


def test_sampled_reason_mixed_reruns_flaky_and_late_first_violation() -> None:
    assert sampled_reason(row("m", ["violated", "held", "violated"])) is not None
    assert sampled_reason(row("m", ["held"] * 3, status="flaky")) is not None
    late = sampled_reason(row("m", ["violated"] * 3, "verdict violated; 1/4 trials violated"))
    assert late is not None and "trial 4" in late
    assert sampled_reason(row("m", ["violated"] * 3, "verdict violated; 1/1 trials violated")) \
        is None
    assert sampled_reason(row("m", ["held"], "verdict held; 0/3 trials violated",
                              status="survived")) is None


def test_select_takes_the_newest_run_per_version_and_every_racy_finding() -> None:
    old = run_file("2026-01-01", "1.0", [row("m-old", ["violated", "held", "violated"])],
                   [finding("C-1", "lane-b", 4, 1)])
    new = run_file("2026-02-01", "1.0", [row("m-new", ["violated"] * 3, "1/3 trials violated",
                                             kind="handwritten", target="ref")],
                   [finding("C-1", "lane-b", 4, 4), finding("C-2", "lane-c", 10, 0)],
                   [{"id": "C-1", "params": {"trials": 3}}, {"id": "C-2", "params": {"trials": 2}}])
    entries = select([Source("results/a.json", "run", old), Source("results/b.json", "run", new)])
    by_kind = {(e.kind, e.mutant_id, e.lane) for e in entries}
    assert (EntryKind.SAMPLED_MUTANT, "m-new", "ref") in by_kind
    assert all(e.mutant_id != "m-old" for e in entries)  # an older run is not today's kill
    assert (EntryKind.RACY_CELL, None, "lane-b") in by_kind  # 1/4 in the older run counts
    assert (EntryKind.CLEAN_CELL, None, "ref") in by_kind  # C-1 has 3 trials; C-2 only 2
    assert not any(e.check_id == "C-2" for e in entries)
    sources = [Source("results/b.json", "run", new), Source("results/a.json", "run", old)]
    assert select(sources) == entries  # the order of the files changes nothing


def test_survey_rows_and_duplicates_merge_their_evidence() -> None:
    survey = {"kind": "arib-survey", "sdk": "1.0", "results": [
        row("m-s", ["violated", "violated", "held"], status="flaky")]}
    run = run_file("2026-02-01", "1.0", [row("m-s", ["violated"] * 3, "1/2 trials violated")],
                   family="openai-agents")
    entries = select([Source("results/survey/openai-agents-1.0/lane-a.json", "survey", survey),
                      Source("results/r.json", "run", run)])
    (entry,) = [e for e in entries if e.mutant_id == "m-s"]
    assert entry.family == "openai-agents"  # the family that names the survey's folder
    with pytest.raises(ResultsError, match="'fam-1.0' names no known family"):
        select([Source("results/survey/fam-1.0/lane-a.json", "survey", survey)])
    assert len(entry.why) == 2 and entry.sdk == "1.0"


def test_corpus_document_counts_and_round_trip(tmp_path: Path) -> None:
    entries = [Entry("fam", "1.0", "C-1", "lane", "m-1", EntryKind.SAMPLED_MUTANT, "generated",
                     ("why",)),
               Entry("fam", "1.0", "C-1", "lane", None, EntryKind.RACY_CELL)]
    document = corpus_document(entries)
    assert document["size"] == 2
    assert document["counts"]["sampled_mutant:generated"] == 1
    assert document["counts"]["racy_cell"] == 1
    path = tmp_path / "corpus.json"
    path.write_text(json.dumps(document))
    assert read_corpus(path) == entries


def test_read_corpus_refuses_another_kind(tmp_path: Path) -> None:
    path = tmp_path / "corpus.json"
    path.write_text(json.dumps({"kind": "arib-survey"}))
    with pytest.raises(ResultsError, match="arib-survey"):
        read_corpus(path)


def test_committed_corpus_is_what_the_tool_selects_from_committed_results() -> None:
    # Selected again from the results committed at the commit it names, read from git: the
    # results committed since (new runs, accepted baselines) do not make it stale.
    committed = json.loads((ROOT / "results" / "races" / "corpus.json").read_text())
    at = committed["selected_at"]
    assert committed == corpus_document(select(load_committed_sources(ROOT, at)), at)


def test_committed_sources_are_the_working_tree_sources_at_head(tmp_path: Path) -> None:
    # The same documents whether read from git at a commit or from that commit's checkout.
    repo = tmp_path / "repo"
    (repo / "results" / "baselines").mkdir(parents=True)
    run = {"kind": "arib-bench-run", "findings": []}
    (repo / "results" / "a.json").write_text(json.dumps(run))
    (repo / "results" / "baselines" / "b.json").write_text(json.dumps(run))
    (repo / "results" / "other.json").write_text(json.dumps({"kind": "something-else"}))
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "x"]):
        subprocess.run([*git, *args], check=True)
    head = head_commit(repo)
    from_git = load_committed_sources(repo, head)
    from_tree = load_sources(repo / "results")
    assert [(s.path, s.role, s.document) for s in from_git] == \
        [(s.path, s.role, s.document) for s in from_tree]
    assert [s.role for s in from_git] == ["run", "baseline"]
