"""What changed: between two runs, against the accepted baseline, and across SDK versions."""

from __future__ import annotations

import enum
import json
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.errors import ResultsError
from harness.results import read_results

Cell = tuple[str, str]  # (invariant id, lane)


class ChangeKind(str, enum.Enum):
    """How a cell differs between two runs."""

    VERDICT = "verdict"
    COUNT = "count"  # the number of violating trials (or of trials) changed
    DETAIL = "detail"  # only item counts changed: informational, see GATING
    NEW = "new"
    GONE = "gone"


# The regression gate fails on these. Counts of a violated cell (violating trials, items lost
# or duplicated) are listed but do not fail it: in a real race on a thread- or server-backed
# backend (PostgreSQL: CLEAR-001 7/10 then 8/10 on the same version) they are not
# reproducible, whether the cell is violated is.
GATING = (ChangeKind.VERDICT, ChangeKind.NEW, ChangeKind.GONE)


@dataclass(frozen=True)
class CellChange:
    """One cell (check x lane) that differs between a run and the one it is compared with."""

    check: str
    lane: str
    kind: ChangeKind
    before: Mapping[str, Any] | None
    after: Mapping[str, Any] | None

    def describe(self) -> str:
        """One line naming the cell and both sides."""
        return f"{self.check} on {self.lane}: {summary(self.before)} -> {summary(self.after)}"

    def to_json(self) -> dict[str, Any]:
        return {"check": self.check, "lane": self.lane, "kind": self.kind.value,
                "before": summary(self.before), "after": summary(self.after)}


def summary(finding: Mapping[str, Any] | None) -> str:
    """A cell in a few words: verdict, violating trials and nonzero counts."""
    if finding is None:
        return "absent"
    text = f"{finding['verdict']} {finding['violating_trials']}/{finding['trials']}"
    counts = ", ".join(f"{k} {v}" for k, v in finding["counts"].items() if v)
    return f"{text} ({counts})" if counts else text


def cells(document: Mapping[str, Any]) -> dict[Cell, Mapping[str, Any]]:
    """The findings of a run by (invariant, lane)."""
    return {(f["invariant_id"], f["target"]): f for f in document["findings"]}


def diff_runs(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[CellChange]:
    """Every cell whose verdict, violating trials or counts differ, plus new and gone cells."""
    old, new = cells(before), cells(after)
    changes = []
    for key in sorted(set(old) | set(new)):
        a, b = old.get(key), new.get(key)
        if a is None:
            kind = ChangeKind.NEW
        elif b is None:
            kind = ChangeKind.GONE
        elif a["verdict"] != b["verdict"]:
            kind = ChangeKind.VERDICT
        elif (a["violating_trials"], a["trials"]) != (b["violating_trials"], b["trials"]):
            kind = ChangeKind.COUNT
        elif a["counts"] != b["counts"]:
            kind = ChangeKind.DETAIL
        else:
            continue
        changes.append(CellChange(key[0], key[1], kind, a, b))
    return changes


def baseline_path(out_dir: Path, sdk: str) -> Path:
    """Where the accepted results of an SDK version live."""
    return out_dir / "baselines" / f"openai-agents-{sdk}.json"


def regressions(document: Mapping[str, Any], out_dir: Path) -> list[CellChange] | None:
    """Changes against the accepted baseline of the run's SDK version; None if none exists."""
    path = baseline_path(out_dir, document["sdk"]["version"])
    if not path.exists():
        return None
    return diff_runs(read_results(path), document)


def accept(run: Path, out_dir: Path) -> Path:
    """Make a run file the accepted baseline of its SDK version (the one explicit update)."""
    document = read_results(run)
    target = baseline_path(out_dir, document["sdk"]["version"])
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(run, target)
    return target


def latest_run(out_dir: Path, sdk: str) -> Path:
    """The newest dated run file of an SDK version."""
    runs = sorted(out_dir.glob(f"*-openai-agents-{sdk}.json"))
    if not runs:
        raise ResultsError(f"no run of openai-agents {sdk!r} in {str(out_dir)!r}; run "
                           f"`nox -s bench -- --versions {sdk}` first")
    return runs[-1]


def version_key(version: str) -> tuple[int, ...]:
    return tuple(int(p) if p.isdigit() else 0 for p in version.split("."))


def _evidence(finding: Mapping[str, Any] | None) -> str:
    if finding is None:
        return "not measured in this version"
    parts = [summary(finding)]
    if finding.get("modes"):
        parts.append("modes " + ", ".join(f"{k}={v}" for k, v in finding["modes"].items()))
    if finding.get("samples"):
        parts.append(f"sample `{finding['samples'][0][:160]}`")
    if finding.get("reason"):
        parts.append(finding["reason"][:160])
    return "; ".join(parts)


def cross_version_markdown(documents: Sequence[Mapping[str, Any]]) -> str:
    """Backends x invariants x versions, then what changed between consecutive versions."""
    docs = sorted(documents, key=lambda d: version_key(d["sdk"]["version"]))
    versions = [d["sdk"]["version"] for d in docs]
    all_cells = sorted({c for d in docs for c in cells(d)}, key=lambda c: (c[1], c[0]))
    lines = ["# Integrity bench across openai-agents versions", "",
             "Generated from the result files by `python -m harness compare`; do not edit.", "",
             "Sources: " + ", ".join(f"`{d.get('_path', '?')}`" for d in docs), "",
             "| lane | invariant | " + " | ".join(versions) + " |",
             "|---|---|" + "---|" * len(versions)]
    by_version = [cells(d) for d in docs]
    for check, lane in [(c[0], c[1]) for c in all_cells]:
        row = []
        for table in by_version:
            f = table.get((check, lane))
            row.append("-" if f is None else (
                f["verdict"] if f["verdict"] != "violated"
                else f"**violated** {f['violating_trials']}/{f['trials']}"))
        lines.append(f"| `{lane}` | {check} | " + " | ".join(row) + " |")
    lines += ["", "## What changed", ""]
    any_change = False
    for prev, cur in zip(docs, docs[1:], strict=False):
        changes = diff_runs(prev, cur)
        a, b = prev["sdk"]["version"], cur["sdk"]["version"]
        if not changes:
            lines.append(f"- {a} -> {b}: no verdict or count changed.")
            continue
        any_change = True
        lines += [f"### {a} -> {b}", ""]
        for ch in changes:
            lines.append(f"- **{ch.check} on `{ch.lane}`** ({ch.kind.value}): {summary(ch.before)}"
                         f" -> {summary(ch.after)}")
            lines.append(f"  - {a}: {_evidence(ch.before)}")
            lines.append(f"  - {b}: {_evidence(ch.after)}")
        lines.append("")
    if not any_change:
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def load_runs(paths: Sequence[Path]) -> list[dict[str, Any]]:
    """Read and validate run files, remembering where each came from."""
    docs = []
    for path in paths:
        doc = read_results(path)
        doc["_path"] = str(path)
        docs.append(doc)
    return docs


def changes_json(changes: Sequence[CellChange]) -> str:
    return json.dumps([c.to_json() for c in changes], indent=1)
