"""Regression gate and cross-version report, on real (small) runs."""

from __future__ import annotations

import json

import pytest

from harness.cli import main
from harness.compare import GATING, ChangeKind, cross_version_markdown, diff_runs, load_runs

SMALL = ["bench", "--lanes", "sqlite-file", "--checks", "ARIB-REPLAY-001",
         "--param", "ARIB-REPLAY-001.trials=1", "--reruns", "1", "--quiet"]


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("results")
    assert main([*SMALL, "--out", str(out)]) == 1  # REPLAY-001 is violated on SQLiteSession
    return out


def only_run(out):
    """The fixture's run: the oldest file (every later run has a file of its own)."""
    return sorted(out.glob("*-openai-agents-*.json"))[0]


def test_no_baseline_then_partial_accept_then_gate_passes(run_dir, capsys):
    sdk = json.loads(only_run(run_dir).read_text())["sdk"]["version"]
    # A run of one lane and one check is partial: refused as the whole baseline ...
    assert main(["accept", "--sdk", sdk, "--out", str(run_dir)]) == 2
    err = capsys.readouterr().err
    assert "is a partial run (lanes selected: sqlite-file; checks selected: ARIB-REPLAY-001)" in err
    assert "--partial" in err and not (run_dir / "baselines").exists()
    # ... and accepted cell by cell when told so.
    assert main(["accept", "--partial", "--sdk", sdk, "--out", str(run_dir)]) == 0
    assert "1 cell(s) from the run, 0 kept" in capsys.readouterr().out
    assert main([*SMALL, "--out", str(run_dir)]) == 1
    assert "every measured verdict equals the accepted baseline" in capsys.readouterr().out


def test_changed_cell_fails_with_exit_3_naming_it(run_dir, capsys):
    baseline = next((run_dir / "baselines").glob("*.json"))
    doc = json.loads(baseline.read_text())
    doc["findings"][0]["counts"]["duplicated"] += 1
    baseline.write_text(json.dumps(doc))
    assert main([*SMALL, "--out", str(run_dir)]) == 1  # item counts alone do not gate
    assert "informational" in capsys.readouterr().out
    doc["findings"][0]["trials"] += 1  # another violating-trial count: informational too
    baseline.write_text(json.dumps(doc))
    assert main([*SMALL, "--out", str(run_dir)]) == 1
    assert "informational" in capsys.readouterr().out
    doc["findings"][0].update(verdict="held", violating_trials=0, replay=None)
    baseline.write_text(json.dumps(doc))
    assert main([*SMALL, "--out", str(run_dir)]) == 3
    err = capsys.readouterr().err
    assert "ARIB-REPLAY-001 on sqlite-file" in err and "verdict" in err
    assert "python -m harness accept --sdk" in err


def test_diff_kinds(run_dir):
    doc = json.loads(only_run(run_dir).read_text())
    other = json.loads(json.dumps(doc))
    other["findings"][0]["verdict"] = "held"
    other["findings"].append({**doc["findings"][0], "target": "new-lane"})
    kinds = {(c.lane, c.kind) for c in diff_runs(doc, other)}
    assert kinds == {("sqlite-file", ChangeKind.VERDICT), ("new-lane", ChangeKind.NEW)}
    assert diff_runs(doc, doc) == []


def test_cross_version_report_lists_changes_with_both_sides(run_dir, tmp_path):
    doc = json.loads(only_run(run_dir).read_text())
    older = json.loads(json.dumps(doc))
    older["sdk"]["version"] = "0.0.1"
    older["findings"][0]["verdict"] = "held"
    older["findings"][0]["violating_trials"] = 0
    (tmp_path / "2026-01-01-openai-agents-0.0.1.json").write_text(json.dumps(older))
    docs = load_runs([tmp_path / "2026-01-01-openai-agents-0.0.1.json", only_run(run_dir)])
    text = cross_version_markdown(docs)
    assert "| `sqlite-file` | ARIB-REPLAY-001 | held |" in text
    assert f"### 0.0.1 -> {doc['sdk']['version']}" in text
    assert "held 0/1" in text and "-> violated 1/1" in text


def test_accept_without_runs_is_a_clear_error(tmp_path, capsys):
    assert main(["accept", "--sdk", "0.19.2", "--out", str(tmp_path)]) == 4
    assert "no run of openai-agents '0.19.2'" in capsys.readouterr().err


def test_cross_version_report_does_not_call_an_unmeasured_lane_gone(run_dir, tmp_path):
    doc = json.loads(only_run(run_dir).read_text())
    older = json.loads(json.dumps(doc))
    older["sdk"]["version"] = "0.0.1"
    older["findings"].append({**doc["findings"][0], "target": "redis-from-url"})
    (tmp_path / "old.json").write_text(json.dumps(older))
    text = cross_version_markdown(load_runs([tmp_path / "old.json", only_run(run_dir)]))
    assert "(gone)" not in text
    assert f"0.0.1 -> {doc['sdk']['version']}: 1 cell(s) not compared" in text


def test_a_flip_where_the_violation_is_partial_is_intermittent_and_does_not_gate(run_dir):
    doc = json.loads(only_run(run_dir).read_text())
    cell = doc["findings"][0]
    assert cell["verdict"] == "violated"
    cell.update(trials=3, violating_trials=3)  # violated in every one of three trials
    sometimes = json.loads(json.dumps(doc))
    sometimes["findings"][0]["violating_trials"] = 1  # violated in one trial of several
    held = json.loads(json.dumps(doc))
    held["findings"][0].update(verdict="held", violating_trials=0)
    (change,) = diff_runs(held, sometimes)
    assert change.kind is ChangeKind.INTERMITTENT and change.kind not in GATING
    (change,) = diff_runs(sometimes, held)
    assert change.kind is ChangeKind.INTERMITTENT
    (change,) = diff_runs(held, doc)  # violated in every trial: a verdict change, gated
    assert change.kind is ChangeKind.VERDICT and change.kind in GATING
