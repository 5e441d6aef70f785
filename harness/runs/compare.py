"""What changed: between two runs, against the accepted baseline, and across SDK versions."""

from __future__ import annotations

import enum
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from arib.ground import invocations
from arib.ground.family import active_family
from arib.ground.files import atomic_write_text
from arib.ground.keys import Cell
from arib.ground.model import Counts
from arib.reports.evidence import grouped, lane_list, mask
from arib.reports.heatmap import LEGEND, heatmap_svg, unavailable
from arib.runs.coverage import coverage_of
from arib.runs.gate_rule import Judgement, judge
from arib.runs.results import read_results
from arib.runs.significance import ALPHA


class ChangeKind(str, enum.Enum):
    """How a cell differs between two runs."""

    VERDICT = "verdict"
    COUNT = "count"  # the number of violating trials (or of trials) changed
    DETAIL = "detail"  # only item counts changed: informational
    NEW = "new"
    GONE = "gone"
    # violated on both sides, but in other ways: the modes of the violating trials differ
    # (lost writes on one, an error on the other), so a fix or a regression hides behind an
    # older defect that keeps the cell violated
    MODE = "mode"


@dataclass(frozen=True)
class CellChange:
    """One cell (check x lane) that differs between a run and the one it is compared with."""

    check: str
    lane: str
    kind: ChangeKind
    before: Mapping[str, Any] | None
    after: Mapping[str, Any] | None
    # for a held or violated cell whose verdict or violating trials changed: how the rule of
    # arib.runs.gate_rule judged it (exactly, or by Fisher's exact test on the two rates)
    judgement: Judgement | None = None

    @property
    def cell(self) -> Cell:
        """The check on the lane that changed."""
        return Cell(self.check, self.lane)

    @property
    def gates(self) -> bool:
        """Whether this change fails the regression gate: a cell new or gone, a verdict that
        moved to or from an error or an abstention, or a change of violating trials that the
        rule of arib.runs.gate_rule finds real. Item counts and modes alone never gate."""
        if self.kind in (ChangeKind.NEW, ChangeKind.GONE):
            return True
        if self.judgement is not None:
            return self.judgement.gates
        return self.kind is ChangeKind.VERDICT

    def describe(self) -> str:
        """One line naming the cell and both sides (with their violations' modes when those
        changed), then how its rates were judged."""
        if self.kind is ChangeKind.MODE:
            text = (f"{self.cell}: violated in another way: "
                    f"{summary(self.before)} {_modes_of(self.before)} -> {summary(self.after)} "
                    f"{_modes_of(self.after)}")
        else:
            text = f"{self.cell}: {summary(self.before)} -> {summary(self.after)}"
        return text if self.judgement is None else f"{text}: {self.judgement.describe()}"

    def to_json(self) -> dict[str, Any]:
        """The JSON form of this change, each side summarized, with its judgement."""
        return {"check": self.check, "lane": self.lane, "kind": self.kind.value,
                "before": summary(self.before), "after": summary(self.after),
                "gates": self.gates,
                "judgement": None if self.judgement is None else self.judgement.to_json()}


def summary(finding: Mapping[str, Any] | None) -> str:
    """A cell in a few words: verdict, violating trials and nonzero counts."""
    if finding is None:
        return "absent"
    text = f"{finding['verdict']} {finding['violating_trials']}/{finding['trials']}"
    shown = Counts.from_json(finding["counts"]).labelled()
    counts = ", ".join(f"{k} {v}" for k, v in shown.items() if v)
    return f"{text} ({counts})" if counts else text


def same_counts(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Whether two findings' JSON counts agree: field by field when both tell wrong results
    from exceptions; against a run written before that split, by the old form's counters
    (lost, duplicated, foreign and their sum as errors), so the split alone is no change."""
    ca, cb = Counts.from_json(a), Counts.from_json(b)
    if "wrong_result" in a and "wrong_result" in b:
        return ca == cb
    return ((ca.lost, ca.duplicated, ca.foreign, ca.wrong_result + ca.raised)
            == (cb.lost, cb.duplicated, cb.foreign, cb.wrong_result + cb.raised))


def violation_modes(finding: Mapping[str, Any] | None) -> frozenset[str] | None:
    """The modes of a violated finding's violating trials, or None when not known: not
    violated, or a file written before they were recorded apart (``violation_modes``) whose
    trials did not all violate (its ``modes`` then mix in the held trials' modes)."""
    if finding is None or finding["verdict"] != "violated":
        return None
    if "violation_modes" in finding:
        return frozenset(finding["violation_modes"])
    if finding["violating_trials"] == finding["trials"] and finding.get("modes"):
        return frozenset(finding["modes"])
    return None


def _modes_of(finding: Mapping[str, Any] | None) -> str:
    modes = violation_modes(finding)
    return "[modes unknown]" if modes is None else f"[modes {', '.join(sorted(modes))}]"


def modes_changed(a: Mapping[str, Any] | None, b: Mapping[str, Any] | None) -> bool:
    """Whether two violated findings of a cell are violated in other ways (both known)."""
    before, after = violation_modes(a), violation_modes(b)
    return before is not None and after is not None and before != after


def cells(document: Mapping[str, Any]) -> dict[Cell, Mapping[str, Any]]:
    """The findings of a run by cell (invariant, lane)."""
    return {Cell.of(f): f for f in document["findings"]}


def diff_runs(before: Mapping[str, Any], after: Mapping[str, Any],
              scope: Callable[[Cell], bool] | None = None) -> list[CellChange]:
    """Every cell whose verdict, violating trials or counts differ, plus new and gone cells;
    a held or violated cell whose verdict or violating trials changed carries its judgement
    (arib.runs.gate_rule: exact, or by rate).

    With ``scope``, only the cells it accepts are compared (the cells both runs measured).
    """
    old, new = cells(before), cells(after)
    changes = []
    for cell in sorted(set(old) | set(new)):
        if scope is not None and not scope(cell):
            continue
        a, b = old.get(cell), new.get(cell)
        if a is None:
            kind = ChangeKind.NEW
        elif b is None:
            kind = ChangeKind.GONE
        elif a["verdict"] != b["verdict"]:
            kind = ChangeKind.VERDICT
        elif modes_changed(a, b):
            kind = ChangeKind.MODE
        elif (a["violating_trials"], a["trials"]) != (b["violating_trials"], b["trials"]):
            kind = ChangeKind.COUNT
        elif not same_counts(a["counts"], b["counts"]):
            kind = ChangeKind.DETAIL
        else:
            continue
        changes.append(CellChange(cell.check_id, cell.lane, kind, a, b, _judged(a, b)))
    return changes


def _judged(a: Mapping[str, Any] | None, b: Mapping[str, Any] | None) -> Judgement | None:
    """The judgement of a cell on both sides whose verdict or violating trials changed."""
    if a is None or b is None or (a["verdict"], a["violating_trials"], a["trials"]) == (
            b["verdict"], b["violating_trials"], b["trials"]):
        return None
    return judge(a, b)


def not_measured_in(document: Mapping[str, Any]) -> Callable[[Cell], str | None]:
    """For a cell, why ``document`` has no finding without that being a change, or None.

    None for a cell the run measured or should have: a cell of a lane it did not measure
    (not selected, or its server missing), of a check it did not select, or left by an
    interruption is not measured, never "gone".
    """
    coverage = coverage_of(document)
    measured = set(cells(document))

    def reason(cell: Cell) -> str | None:
        return None if cell in measured else coverage.why_not_measured(cell, measured)

    return reason


@dataclass(frozen=True)
class GateResult:
    """A run against its accepted baseline: the changed cells and the ones not compared."""

    changes: tuple[CellChange, ...]
    compared: int
    # reason -> cells of the baseline that this run did not measure, so did not compare
    not_compared: Mapping[str, tuple[Cell, ...]] = field(default_factory=dict)


def gate(baseline: Mapping[str, Any], document: Mapping[str, Any]) -> GateResult:
    """Compare only the cells the run measured; list the baseline's others with the reason."""
    reason_of = not_measured_in(document)
    skipped: dict[str, list[Cell]] = {}

    def scope(cell: Cell) -> bool:
        reason = reason_of(cell)
        if reason is not None:
            skipped.setdefault(reason, []).append(cell)
        return reason is None

    changes = diff_runs(baseline, document, scope)
    compared = len({*cells(baseline), *cells(document)}) - sum(map(len, skipped.values()))
    return GateResult(tuple(changes), compared,
                      {reason: tuple(found) for reason, found in skipped.items()})


def render_gate(result: GateResult, sdk: str) -> tuple[list[str], list[str]]:
    """The gate in lines: what was not compared and why, informational changes, the verdict;
    and, apart, the lines of the changes that fail it (empty when it passes)."""
    info = []
    if result.not_compared:
        total = sum(map(len, result.not_compared.values()))
        info.append(f"regression gate: {total} cell(s) of the accepted baseline of {sdk} "
                    f"not measured in this run, so not compared:")
        for reason, skipped in sorted(result.not_compared.items()):
            lanes = sorted({cell.lane for cell in skipped})
            checks = sorted({cell.check_id for cell in skipped})
            names = (f"checks {', '.join(checks)}" if len(checks) < len(lanes)
                     else f"lanes {', '.join(lanes)}")
            info.append(f"  {len(skipped)} cell(s) of {names}: {reason}")
    gating = [c for c in result.changes if c.gates]
    label = {ChangeKind.MODE: "mode changed: "}
    info += [f"regression gate, informational: {label.get(c.kind, '')}{c.describe()}"
             for c in result.changes if not c.gates]
    if not gating:
        info.append(f"regression gate: {passed(result, sdk)} ({result.compared} cell(s) "
                    f"compared)")
        return info, []
    failures = [f"regression gate: {len(gating)} of {result.compared} compared cell(s) differ "
                f"from the accepted baseline of {active_family().name} {sdk}:"]
    failures += [f"  {c.kind.value}: {c.describe()}" for c in gating]
    accept = invocations.harness_command(f"accept --sdk {sdk}", active_family().name)
    failures.append(f"if the change is real, accept it: `{accept}` "
                    f"and commit results/baselines/")
    return info, failures


def passed(result: GateResult, sdk: str) -> str:
    """What a gate that passed found: every verdict equal, or (never a bare "equals" when a
    verdict moved) how many moved without a significant change of rate."""
    flips = sum(1 for c in result.changes if c.kind is ChangeKind.VERDICT and not c.gates)
    if not flips:
        return f"every measured verdict equals the accepted baseline of {sdk}"
    return (f"no significant change from the accepted baseline of {sdk}: {flips} verdict(s) "
            f"above moved, each a racy cell whose rate did not change significantly (Fisher's "
            f"exact test, alpha {ALPHA:g})")


def version_key(version: str) -> tuple[tuple[int, ...], ...]:
    """A sort key for a dotted version, or a family's components label ordered by its
    components in turn ("cp2.0.26+sq2.0.11+pg2.0.24"): numeric parts as numbers, others 0."""
    return invocations.version_key(version)


def _evidence(finding: Mapping[str, Any] | None) -> str:
    if finding is None:
        return "not measured in this version"
    parts = [summary(finding)]
    if finding.get("modes"):
        parts.append("modes " + ", ".join(f"{k}={v}" for k, v in finding["modes"].items()))
    if finding.get("violation_modes"):
        parts.append("violating trials' modes " + ", ".join(
            f"{k}={v}" for k, v in finding["violation_modes"].items()))
    if finding.get("samples"):
        parts.append(f"sample `{finding['samples'][0][:160]}`")
    if finding.get("reason"):
        parts.append(finding["reason"][:160])
    return "; ".join(parts)


def _shown(finding: Mapping[str, Any] | None) -> str:
    """A cell of the cross-version table: '-' when not measured in that version; a violated
    one with its violating trials and, where known, its violations' modes."""
    if finding is None:
        return "-"
    if finding["verdict"] != "violated":
        return str(finding["verdict"])
    modes = violation_modes(finding)
    how = f" ({', '.join(sorted(modes))})" if modes else ""
    return f"**violated** {finding['violating_trials']}/{finding['trials']}{how}"


def _changes_across(found: Sequence[Mapping[str, Any] | None]) -> bool:
    """Whether a row's verdict, or the way it is violated, changes among the versions that
    measured it."""
    measured = [f for f in found if f is not None]
    if len({f["verdict"] for f in measured}) > 1:
        return True
    known = {violation_modes(f) for f in measured} - {None}
    return len(known) > 1


def _table_rows(docs: Sequence[Mapping[str, Any]], compact: bool) -> list[str]:
    """Lane x invariant rows by version; ``compact``: only those whose verdict (or whose
    violations' modes) change among the versions that measured the cell."""
    by_version = [cells(d) for d in docs]
    all_cells = sorted({c for t in by_version for c in t}, key=lambda c: (c.lane, c.check_id))
    lines = ["| lane | invariant | " + " | ".join(d["sdk"]["version"] for d in docs) + " |",
             "|---|---|" + "---|" * len(docs)]
    for cell in all_cells:
        found = [t.get(cell) for t in by_version]
        if compact and not _changes_across(found):
            continue
        lines.append(f"| `{cell.lane}` | {cell.check_id} | "
                     + " | ".join(map(_shown, found)) + " |")
    return lines


def _changes_between(prev: Mapping[str, Any], cur: Mapping[str, Any]) -> list[str]:
    """What changed from one version to the next; cells that changed alike shown once."""
    before, after = not_measured_in(prev), not_measured_in(cur)
    skipped = {c for c in {*cells(prev), *cells(cur)} if before(c) or after(c)}
    changes = [c for c in diff_runs(prev, cur) if c.cell not in skipped]
    a, b = prev["sdk"]["version"], cur["sdk"]["version"]
    lines = []
    if skipped:
        lines.append(f"- {a} -> {b}: {len(skipped)} cell(s) not compared, measured in "
                     f"only one of the two runs (see each run's coverage).")
    if not changes:
        return [*lines, f"- {a} -> {b}: no verdict or count changed."]
    lines += [f"### {a} -> {b}", ""]
    alike = grouped(changes, lambda c: (c.check, c.kind, mask(_evidence(c.before)),
                                        mask(_evidence(c.after)),
                                        c.judgement and (c.judgement.basis, c.gates)))
    for group in alike:
        ch, lanes = group[0], [c.lane for c in group]
        where = (f"`{ch.lane}`" if len(lanes) == 1
                 else f"{len(lanes)} lanes alike: {lane_list(lanes)}")
        lines.append(f"- **{ch.check} on {where}** ({ch.kind.value}): {summary(ch.before)}"
                     f" -> {summary(ch.after)}")
        shown = "" if len(lanes) == 1 else f" (on `{ch.lane}`)"
        lines.append(f"  - {a}{shown}: {_evidence(ch.before)}")
        lines.append(f"  - {b}{shown}: {_evidence(ch.after)}")
        if ch.judgement is not None:
            lines.append(f"  - judged{shown}: {ch.judgement.describe()}")
    return [*lines, ""]


def cross_version_markdown(documents: Sequence[Mapping[str, Any]],
                           picture: str | None = None,
                           no_picture: str | None = None) -> str:
    """The picture, the rows that change, the full table, then what changed version to version.

    ``picture`` is the file name of the heat map (beside the Markdown); ``no_picture`` says why
    there is none.
    """
    docs = sorted(documents, key=lambda d: version_key(d["sdk"]["version"]))
    family = docs[0]["sdk"]["name"] if docs else invocations.family_name(None)
    lines = [f"# Integrity bench across {family} versions", "",
             "Generated from the result files by `python -m arib compare`; do not edit.", "",
             "Sources: " + ", ".join(f"`{d.get('_path', '?')}`" for d in docs), ""]
    if picture is not None:
        lines += [f"![lanes x invariants across {family} versions: {LEGEND}]({picture})",
                  ""]
    elif no_picture is not None:
        lines += [f"No picture: {no_picture}.", ""]
    compact = _table_rows(docs, compact=True)
    full = _table_rows(docs, compact=False)
    total = len(full) - 2
    lines += ["## Rows whose verdict or mode changes", "",
              f"{len(compact) - 2} of {total} rows change verdict, or stay violated in another "
              f"way (the modes of the violating trials, in parentheses), across the versions "
              f"that measured them (`-`: not measured in that version); every row is in the "
              f"full table below.", ""]
    lines += [*(compact if len(compact) > 2 else ["No verdict or mode changes."]), ""]
    lines += ["## Every row", "", *full, "", "## What changed", ""]
    for prev, cur in zip(docs, docs[1:], strict=False):
        lines += _changes_between(prev, cur)
    return "\n".join(lines).rstrip() + "\n"


def write_cross_version(documents: Sequence[Mapping[str, Any]], target: Path) -> list[str]:
    """Write the cross-version Markdown to ``target`` and its heat map beside it (``.svg``);
    the lines to show: what was written, and why the picture was not drawn if it was not."""
    docs = sorted(documents, key=lambda d: version_key(d["sdk"]["version"]))
    picture = target.with_suffix(".svg")
    reason = unavailable()
    shown = []
    if reason is None:
        atomic_write_text(picture, heatmap_svg(docs))
        shown.append(f"wrote {picture} (the heat map)")
    else:
        shown.append(f"picture not drawn: {reason}"
                     + (f"; {picture} is left as it was and no longer referenced"
                        if picture.exists() else ""))
    atomic_write_text(target, cross_version_markdown(
        docs, picture.name if reason is None else None, reason))
    return [*shown, f"wrote {target} ({len(docs)} versions)"]


def load_runs(paths: Sequence[Path]) -> list[dict[str, Any]]:
    """Read and validate run files, remembering where each came from."""
    docs = []
    for path in paths:
        doc = read_results(path)
        doc["_path"] = str(path)
        docs.append(doc)
    return docs


def changes_json(changes: Sequence[CellChange]) -> str:
    """The changes as indented JSON text."""
    return json.dumps([c.to_json() for c in changes], indent=1)
