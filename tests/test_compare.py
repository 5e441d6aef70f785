"""Regression gate and cross-version report, on real (small) runs."""

from __future__ import annotations

import json
import re

import pytest

from arib.cli.main import main
from arib.reports.markdown import render_markdown
from arib.reports.summary import append_job_summary, job_summary
from arib.runs.baseline import regressions
from arib.runs.compare import (
    ChangeKind,
    cross_version_markdown,
    diff_runs,
    gate,
    load_runs,
    render_gate,
)

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
    out = capsys.readouterr().out
    assert "created, there was no baseline" in out and "1 cell(s) from the run" in out
    assert main([*SMALL, "--out", str(run_dir)]) == 1
    assert "every measured verdict equals the accepted baseline" in capsys.readouterr().out


@pytest.fixture
def accepted_dir(tmp_path):
    """A run of its own with its baseline accepted (xdist may run tests of one module apart)."""
    out = tmp_path / "results"
    assert main([*SMALL, "--out", str(out)]) == 1
    sdk = json.loads(only_run(out).read_text())["sdk"]["version"]
    assert main(["accept", "--partial", "--sdk", sdk, "--out", str(out)]) == 0
    return out


def test_changed_cell_fails_with_exit_3_naming_it(accepted_dir, capsys):
    run_dir = accepted_dir
    baseline = next((run_dir / "baselines").glob("*.json"))
    capsys.readouterr()
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
    assert "python -m arib accept --sdk" in err


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
    assert ("  - judged: rate 0/1 -> 1/1, judged exactly: every trial of each run agreed, no "
            "schedule decision uncontrolled, no server unscheduled") in text


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


def test_a_flip_is_judged_by_rate_where_trials_disagree_and_exactly_where_they_agree(run_dir):
    doc = json.loads(only_run(run_dir).read_text())
    cell = doc["findings"][0]
    assert cell["verdict"] == "violated" and "control" not in cell  # REPLAY-001: unscheduled
    cell.update(trials=3, violating_trials=3)  # violated in every one of three trials
    sometimes = json.loads(json.dumps(doc))
    sometimes["findings"][0]["violating_trials"] = 1  # violated in one trial of several
    held = json.loads(json.dumps(doc))
    held["findings"][0].update(verdict="held", violating_trials=0)
    (change,) = diff_runs(held, sometimes)
    assert change.kind is ChangeKind.VERDICT and not change.gates  # racy, p=1.00
    (change,) = diff_runs(sometimes, held)
    assert change.kind is ChangeKind.VERDICT and not change.gates
    (change,) = diff_runs(held, doc)  # every trial agreed on each side: exact, gated
    assert change.kind is ChangeKind.VERDICT and change.gates
    assert change.to_json()["judgement"]["basis"] == "agreed"
    # The gate passes, naming the rates and the p-value, and says that a verdict moved
    # instead of "every verdict equals".
    info, failures = render_gate(gate(sometimes, held), "9.9")
    assert failures == []
    assert info[0] == ("regression gate, informational: ARIB-REPLAY-001 on sqlite-file: "
                       f"{summary_of(sometimes)} -> {summary_of(held)}: rate 1/3 -> 0/3, "
                       "p=1.00, not significant (racy: the baseline's trials disagreed, 1 of 3 "
                       "violated; with 3 and 3 trials no change can be significant)")
    assert info[-1] == ("regression gate: no significant change from the accepted baseline of "
                        "9.9: 1 verdict(s) above moved, each a racy cell whose rate did not "
                        "change significantly (Fisher's exact test, alpha 0.05) (1 cell(s) "
                        "compared)")
    info, failures = render_gate(gate(held, doc), "9.9")
    assert info == [] and "  verdict: ARIB-REPLAY-001 on sqlite-file: held 0/3" in failures[1]
    assert failures[1].endswith("rate 0/3 -> 3/3, judged exactly: every trial of each run "
                                "agreed, no schedule decision uncontrolled, no server unscheduled")
    info, _ = render_gate(gate(doc, doc), "9.9")
    assert info == ["regression gate: every measured verdict equals the accepted baseline of "
                    "9.9 (1 cell(s) compared)"]


def test_a_significant_change_of_rate_gates_even_without_a_verdict_change(run_dir):
    doc = json.loads(only_run(run_dir).read_text())
    doc["findings"][0].update(trials=10, violating_trials=10)
    fewer = json.loads(json.dumps(doc))
    fewer["findings"][0]["violating_trials"] = 2  # 10/10 then 2/10: p = 7.1e-04
    (change,) = gate(doc, fewer).changes
    assert change.kind is ChangeKind.COUNT and change.gates
    _, failures = render_gate(gate(doc, fewer), "9.9")
    assert failures[1].startswith("  count: ARIB-REPLAY-001 on sqlite-file: violated 10/10")
    assert "rate 10/10 -> 2/10, p=7.1e-04, significant at alpha 0.05" in failures[1]
    fewer["findings"][0]["violating_trials"] = 8  # 10/10 then 8/10: p = 0.47, listed
    info, failures = render_gate(gate(doc, fewer), "9.9")
    assert not failures and "rate 10/10 -> 8/10, p=0.47, not significant" in info[0]
    assert info[-1].startswith("regression gate: every measured verdict equals")


def test_a_verdict_to_or_from_an_error_gates_without_a_rate(run_dir):
    doc = json.loads(only_run(run_dir).read_text())
    broken = json.loads(json.dumps(doc))
    broken["findings"][0].update(verdict="error", violating_trials=0)
    (change,) = diff_runs(doc, broken)
    assert change.kind is ChangeKind.VERDICT and change.judgement is None and change.gates


def with_lane(doc, lane, new_id):
    """A copy of the run's REPLAY-001 finding on another lane, with other random ids."""
    finding = json.loads(json.dumps(doc["findings"][0]))
    old_id = re.search(r"fc_([0-9a-f]{16})", finding["samples"][0]).group(1)
    finding["samples"] = [s.replace(old_id, new_id) for s in finding["samples"]]
    return {**finding, "target": lane}


def test_compact_table_shows_only_rows_whose_verdict_changes(run_dir, tmp_path):
    doc = json.loads(only_run(run_dir).read_text())
    doc["findings"].append(with_lane(doc, "sqlite-memory", "0123456789abcdef"))
    older = json.loads(json.dumps(doc))
    older["sdk"]["version"] = "0.0.1"
    older["findings"][0].update(verdict="held", violating_trials=0)
    text = cross_version_markdown([older, doc])
    compact = text.split("## Rows whose verdict or mode changes")[1].split("## Every row")[0]
    every = text.split("## Every row")[1].split("## What changed")[0]
    assert "1 of 2 rows change verdict" in compact
    assert "| `sqlite-file` | ARIB-REPLAY-001 | held |" in compact
    assert "`sqlite-memory`" not in compact and "`sqlite-memory`" in every


def test_a_change_alike_on_several_lanes_is_shown_once(run_dir):
    doc = json.loads(only_run(run_dir).read_text())
    doc["findings"] += [with_lane(doc, "sqlite-memory", "0123456789abcdef"),
                        with_lane(doc, "async-sqlite-file", "fedcba9876543210")]
    older = json.loads(json.dumps(doc))
    older["sdk"]["version"] = "0.0.1"
    for f in older["findings"]:
        f.update(verdict="held", violating_trials=0, samples=[])
    changed = cross_version_markdown([older, doc]).split("## What changed")[1]
    assert "**ARIB-REPLAY-001 on 3 lanes alike: `async-sqlite-file`, `sqlite-file`, " \
           "`sqlite-memory`** (verdict)" in changed
    assert changed.count("sample `") == 1  # the evidence once, not once per lane


def test_evidence_shared_by_lanes_is_shown_once_in_the_run_report(run_dir):
    doc = json.loads(only_run(run_dir).read_text())
    other = with_lane(doc, "async-sqlite-file", "fedcba9876543210")
    other["ops"] = ["add_items(batch)  # another way to break it"]
    doc["findings"] += [with_lane(doc, "sqlite-memory", "0123456789abcdef"), other]
    text = render_markdown(doc)
    assert text.count("### ARIB-REPLAY-001") == 1
    assert "### ARIB-REPLAY-001: violated on 3 lanes" in text
    assert "Evidence on `sqlite-file`, the same on `sqlite-memory` (only ids and seeds " \
           "differ):" in text
    assert "Evidence on `async-sqlite-file`:" in text
    assert text.count("- operations, in order:") == 2
    assert text.count("- invariant: ") == 1
    for lane in ("sqlite-file", "sqlite-memory", "async-sqlite-file"):
        assert f"| `{lane}` | violated | " in text  # each lane keeps its own row and replay


def test_bench_appends_a_job_summary_under_github_actions(tmp_path, capsys, monkeypatch):
    summary = tmp_path / "step-summary.md"
    summary.write_text("earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    out = tmp_path / "results"
    assert main([*SMALL, "--out", str(out)]) == 1
    text = summary.read_text()
    assert text.startswith("earlier step\n### Integrity bench: openai-agents ")
    assert "| held | violated | not_applicable | error |" in text
    assert "| 0 | 1 | 0 | 0 |" in text
    assert "- **partial run**: lanes selected: sqlite-file; checks selected: ARIB-REPLAY-001" \
        in text
    assert "regression gate: not run; no accepted baseline" in text
    assert "- exit code 1: violations measured" in text
    (run,) = out.glob("*-openai-agents-*.json")
    assert f"`{run}`, `{run.with_suffix('.md')}`" in text
    assert main(["accept", "--partial", str(run), "--out", str(out)]) == 0
    assert main([*SMALL, "--out", str(out)]) == 1
    second = summary.read_text()[len(text):]
    assert ("regression gate: **passed**, every measured verdict equals the accepted baseline "
            "of") in second


def test_job_summary_names_failing_cells_and_survives_an_unwritable_target(run_dir, tmp_path,
                                                                        capsys):
    doc = json.loads(only_run(run_dir).read_text())
    baseline = json.loads(json.dumps(doc))
    baseline["findings"][0].update(verdict="held", violating_trials=0)
    (tmp_path / "baselines").mkdir()
    (tmp_path / "baselines" / f"openai-agents-{doc['sdk']['version']}.json").write_text(
        json.dumps(baseline))
    text = job_summary(doc, (only_run(run_dir),), 3, regressions(doc, tmp_path))
    assert "regression gate: **failed**, 1 of 1 cell(s) differ" in text
    assert "  - verdict: ARIB-REPLAY-001 on sqlite-file: held 0/1 (duplicated 2) -> violated 1/1 " \
           "(duplicated 2)" in text
    assert "- exit code 3: cells changed against the accepted baseline" in text
    assert append_job_summary(doc, (), 3, None,
                              environ={"GITHUB_STEP_SUMMARY": str(tmp_path)}) == 3
    assert "job summary not written to GITHUB_STEP_SUMMARY=" in capsys.readouterr().err
    assert append_job_summary(doc, (), 1, None, environ={}) == 1  # not under Actions
    assert "regression gate: not run; no accepted baseline" in job_summary(doc, (), 1, None)


def test_cross_version_report_orders_components_labels_by_their_components(run_dir, tmp_path):
    """A family whose version names several distributions (LangGraph's "cp..+sq..+pg..")
    is ordered by each component in turn, never by the label's text."""
    doc = json.loads(only_run(run_dir).read_text())
    labels = ["cp4.3.2+sq3.1.2+pg3.2.0", "cp2.0.26+sq2.0.11+pg2.0.24", "cp10.0.0+sq1.0.0+pg1.0.0",
              "cp2.0.10+sq2.0.0+pg2.0.0"]
    paths = []
    for i, label in enumerate(labels):
        copy = json.loads(json.dumps(doc))
        copy["sdk"] = {**copy["sdk"], "name": "langgraph-checkpoint", "version": label}
        paths.append(tmp_path / f"2026-01-0{i + 1}-langgraph-{label}.json")
        paths[-1].write_text(json.dumps(copy))
    text = cross_version_markdown(load_runs(paths))
    header = next(line for line in text.splitlines() if line.startswith("| lane |"))
    assert header == ("| lane | invariant | cp2.0.10+sq2.0.0+pg2.0.0 | cp2.0.26+sq2.0.11+pg2.0.24"
                      " | cp4.3.2+sq3.1.2+pg3.2.0 | cp10.0.0+sq1.0.0+pg1.0.0 |")
    assert "- cp2.0.26+sq2.0.11+pg2.0.24 -> cp4.3.2+sq3.1.2+pg3.2.0: no verdict" in text


def violated_as(doc, version, modes, trials=3):
    """A copy of the run, every finding violated in all ``trials`` with ``modes``."""
    other = json.loads(json.dumps(doc))
    other["sdk"]["version"] = version
    for f in other["findings"]:
        f.update(verdict="violated", trials=trials, violating_trials=trials, modes=modes,
                 violation_modes=modes)
    return other


def test_a_cell_violated_in_another_way_is_a_mode_change(run_dir, tmp_path):
    # the same verdict and counts on both sides, only how it is violated differs
    doc = json.loads(only_run(run_dir).read_text())
    lost = violated_as(doc, "0.0.1", {"lost": 3})
    error = violated_as(doc, "0.0.2", {"error": 3})
    [change] = diff_runs(lost, error)
    assert change.kind is ChangeKind.MODE and not change.gates and change.judgement is None
    assert change.describe() == ("ARIB-REPLAY-001 on sqlite-file: violated in another way: "
                                 f"{summary_of(lost)} [modes lost] -> {summary_of(error)} "
                                 f"[modes error]")
    assert not diff_runs(lost, violated_as(doc, "0.0.3", {"lost": 3}))  # the same way
    # the gate lists it as informational, with both sides' modes, and passes
    info, failures = render_gate(gate(lost, error), "9.9")
    assert not failures
    assert ("regression gate, informational: mode changed: ARIB-REPLAY-001 on sqlite-file: "
            "violated in another way:") in info[0]
    assert "[modes lost] ->" in info[0] and info[0].endswith("[modes error]")
    # the cross-version report lists the row and what changed, with the modes
    text = cross_version_markdown([lost, error])
    compact = text.split("## Rows whose verdict or mode changes")[1].split("## Every row")[0]
    assert "1 of 1 rows change verdict, or stay violated in another way" in compact
    assert ("| `sqlite-file` | ARIB-REPLAY-001 | **violated** 3/3 (lost) | **violated** 3/3 "
            "(error) |") in compact
    changed = text.split("## What changed")[1]
    assert "**ARIB-REPLAY-001 on `sqlite-file`** (mode)" in changed
    assert "violating trials' modes lost=3" in changed
    assert "violating trials' modes error=3" in changed


def summary_of(doc):
    from arib.runs.compare import summary

    return summary(doc["findings"][0])


def test_held_trials_modes_are_no_mode_change_and_unknown_modes_are_not_compared(run_dir):
    doc = json.loads(only_run(run_dir).read_text())
    all_lost = violated_as(doc, "0.0.1", {"lost": 3})
    some_lost = violated_as(doc, "0.0.2", {"lost": 1, "exact": 2})
    some_lost["findings"][0].update(violating_trials=1, violation_modes={"lost": 1})
    assert [c.kind for c in diff_runs(all_lost, some_lost)] == [ChangeKind.COUNT]
    # a file written before violation_modes, with held trials: its modes mix both kinds
    older = json.loads(json.dumps(some_lost))
    del older["findings"][0]["violation_modes"]
    older["findings"][0]["modes"] = {"error": 1, "exact": 2}
    assert diff_runs(older, some_lost) == []  # which of its modes violated is unknown
    # ... but where every trial violated, its modes are the violations'
    whole = json.loads(json.dumps(all_lost))
    del whole["findings"][0]["violation_modes"]
    assert [c.kind for c in diff_runs(whole, violated_as(doc, "0.0.3", {"error": 3}))] == [
        ChangeKind.MODE]
