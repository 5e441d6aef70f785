"""The generated tables of the documentation pages are generated from their sources and up to
date: the invariants in checks/README.md, the operators in mutants/README.md, the newest runs
in results/README.md."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from arib.checks.registry import load_checks
from arib.dev.docs import (
    BEGIN,
    CHECKS_PAGE,
    END,
    OPERATORS_PAGE,
    RUNS_BEGIN,
    RUNS_END,
    RUNS_PAGE,
    committed_names,
    newest_runs,
    render_checks,
    render_operators,
    render_pages,
    runs_table,
)
from arib.ground.errors import UsageError

ROOT = Path(__file__).resolve().parent.parent


def block(page: Path, begin: str, end: str) -> str:
    return (ROOT / page).read_text().split(begin, 1)[1].split(end, 1)[0]


def test_every_generated_page_is_current():
    pages = render_pages(ROOT, load_checks())
    for page, text in pages.items():
        assert text == (ROOT / page).read_text(), f"{page}: run `python -m arib docs`"


def test_every_check_is_in_the_table():
    table = block(CHECKS_PAGE, BEGIN, END)
    for check in load_checks():
        assert f"| {check.id} | {check.invariant} |" in table


def test_missing_markers_are_named():
    with pytest.raises(UsageError, match="'checks/README.md' has no generated block"):
        render_checks("# nothing here\n", load_checks())
    with pytest.raises(UsageError, match="no generated block"):
        render_operators("# nothing here\n")


def test_every_operator_is_in_the_table():
    from arib.mutants.operators import OPERATORS

    table = block(OPERATORS_PAGE, "<!-- operators:begin", "<!-- operators:end -->")
    for name, op in OPERATORS.items():
        assert f"| `{name}` |" in table and op.defect in table


def test_runs_table_counts_the_findings_by_verdict():
    document = {"sdk": {"version": "9.9"}, "started": "2026-01-02T03:04:05+00:00",
                "duration_s": 12.4, "_path": "x.json",
                "coverage": {"lanes_not_measured": {"mongodb": "no server"}},
                "findings": [{"verdict": v} for v in
                             ("held", "held", "violated", "not_applicable", "error")]}
    row = runs_table([document]).splitlines()[2]
    assert row == ("| 9.9 | [`x.json`](x.json) | 2026-01-02T03:04 | 5 | 2 | 1 | 1 | 1 | 1 "
                   "| 12 s |")


def test_the_runs_table_shows_the_newest_whole_run_of_each_version():
    table = block(RUNS_PAGE, RUNS_BEGIN, RUNS_END)
    documents = newest_runs(ROOT / "results")
    assert documents, "no committed run of the default family"
    for d in documents:
        assert d["sdk"]["version"] in table and d["_path"] in table
        assert not d["coverage"]["partial"] if "coverage" in d else True


def test_a_run_file_not_committed_is_left_out(tmp_path: Path):
    """A bench that has just written a run file does not make the committed page stale."""
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    source = newest_runs(ROOT / "results")[-1]
    committed = {k: v for k, v in source.items() if k != "_path"}
    name = f"2026-01-01T000000Z-00000001-{committed['sdk']['name']}-" \
           f"{committed['sdk']['version']}.json"
    (tmp_path / name).write_text(json.dumps(committed))
    subprocess.run(["git", "-C", str(tmp_path), "add", name], check=True)
    newer = {**committed, "started": "2099-01-01T00:00:00+00:00"}
    untracked = name.replace("2026-01-01T000000Z-00000001", "2099-01-01T000000Z-00000002")
    (tmp_path / untracked).write_text(json.dumps(newer))
    assert committed_names(tmp_path) == {name}
    assert [d["_path"] for d in newest_runs(tmp_path)] == [name]
