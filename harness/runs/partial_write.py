"""Where a run's outputs go when it measured less than the documents already there.

A survey folder (``results/survey/<family>-<version>/``) holds one document per lane and the
mutation report of them all. A survey that measured fewer lanes, or fewer checks on a lane,
than the folder already holds (or whose lane ended in an error where the folder's is ok) is
*partial* against it. A partial survey is written beside the folder, in
``<folder>/partial/<stamp>/``, each lane document marked ``partial`` with what it lacks, and
the folder is left as it was. With ``--partial`` it is merged into the folder lane by lane:
each lane it measured whole (every check the folder's document of that lane judged) replaces
that lane's document and its files in the mutation report; the folder's other lanes stay; a
lane it measured short still goes beside. A survey that is not partial replaces the folder's
documents as before.

The same rule holds for one-document outputs (``official``'s tables, ``parity update``'s
report): a document that lists fewer lanes, checks, workflows or generated cases than the
one at its path goes beside it (``beside``), marked partial (``document_shrink``).
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from arib.ground.files import atomic_write_text
from arib.runs.results import new_run_id

PARTIAL_DIR = "partial"
REPORT = "mutation-report.json"


@dataclass(frozen=True)
class Shrink:
    """What a survey lacks against the folder it would be written to."""

    missing_lanes: tuple[str, ...] = ()  # lanes the folder holds and the survey did not measure
    missing_checks: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # lane -> checks
    errored: tuple[str, ...] = ()  # lanes ok in the folder, an error in the survey

    @property
    def short_lanes(self) -> frozenset[str]:
        """The measured lanes whose documents would replace more than they hold."""
        return frozenset({*self.missing_checks, *self.errored})

    def __bool__(self) -> bool:
        return bool(self.missing_lanes or self.missing_checks or self.errored)

    def describe(self) -> str:
        """One line: what the survey lacks."""
        parts = []
        if self.missing_lanes:
            parts.append(f"{len(self.missing_lanes)} lane(s) not measured "
                         f"({', '.join(self.missing_lanes)})")
        for lane, checks in sorted(self.missing_checks.items()):
            parts.append(f"{lane} without {len(checks)} check(s) ({', '.join(checks)})")
        if self.errored:
            parts.append(f"lane error on {', '.join(self.errored)}")
        return "; ".join(parts)

    def to_json(self) -> dict[str, Any]:
        """The marker a partial lane document carries."""
        return {"missing_lanes": list(self.missing_lanes),
                "missing_checks": {k: list(v) for k, v in sorted(self.missing_checks.items())},
                "errored": list(self.errored), "reason": self.describe()}


def committed_lanes(folder: Path) -> dict[str, dict[str, Any]]:
    """The lane documents a survey folder holds, by lane (unreadable files are skipped)."""
    docs: dict[str, dict[str, Any]] = {}
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else ():
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(doc, dict) and doc.get("kind") == "arib-survey" and "lane" in doc:
            docs[str(doc["lane"])] = doc
    return docs


def shrink(committed: Mapping[str, Mapping[str, Any]],
           fresh: Mapping[str, Mapping[str, Any]]) -> Shrink:
    """What the ``fresh`` lane documents lack against the ``committed`` ones."""
    missing_checks = {}
    for lane, doc in fresh.items():
        old = committed.get(lane)
        if old is None:
            continue
        lacking = tuple(sorted(set(old.get("clean", {})) - set(doc.get("clean", {}))))
        if lacking:
            missing_checks[lane] = lacking
    return Shrink(
        missing_lanes=tuple(lane for lane in committed if lane not in fresh),
        missing_checks=missing_checks,
        errored=tuple(lane for lane, doc in fresh.items() if doc.get("error")
                      and lane in committed and not committed[lane].get("error")))


def _dump(doc: Any) -> str:
    return json.dumps(doc, indent=1, ensure_ascii=False) + "\n"


def _report_files(report: Mapping[str, Any], lanes: frozenset[str]) -> dict[str, Any]:
    """The report's files of ``lanes`` (a file is keyed ``<lane>/<module path>``)."""
    return {k: v for k, v in report.get("files", {}).items() if k.split("/", 1)[0] in lanes}


def _merged_report(folder: Path, fresh: Mapping[str, Any], replaced: frozenset[str]
                   ) -> dict[str, Any]:
    """The folder's mutation report with the files of ``replaced`` lanes taken from
    ``fresh``: the other lanes' files are kept as they are."""
    from arib.reports.mutation import report_document, validate_mutation_report

    try:
        old = json.loads((folder / REPORT).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        old = {"files": {}}
    files = {k: v for k, v in old.get("files", {}).items()
             if k.split("/", 1)[0] not in replaced}
    files.update(_report_files(fresh, replaced))
    checks = sorted({c for entry in files.values() for m in entry["mutants"]
                     for c in m.get("coveredBy", ())})
    merged = report_document(files, checks, thresholds=fresh.get("thresholds", {}))
    validate_mutation_report(merged)
    return merged


def _stamp() -> str:
    return dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H%M%SZ") + "-" + new_run_id()


@dataclass(frozen=True)
class Written:
    """Where a survey's documents went and what to tell the user."""

    paths: tuple[Path, ...]
    lines: tuple[str, ...]


def write_lanes(folder: Path, docs: Sequence[dict[str, Any]], report: Mapping[str, Any],
                *, merge: bool) -> Written:
    """Write the lane documents ``docs`` and their mutation report ``report`` to ``folder``,
    beside it when they are partial against it, or merged into it lane by lane (``merge``)."""
    fresh = {str(d["lane"]): d for d in docs}
    gap = shrink(committed_lanes(folder), fresh)
    paths: list[Path] = []
    lines: list[str] = []
    if not gap:
        for lane, doc in fresh.items():
            paths.append(folder / f"{lane}.json")
            atomic_write_text(paths[-1], _dump(doc))
        paths.append(folder / REPORT)
        atomic_write_text(paths[-1], _dump(report))
        return Written(tuple(paths), ())
    into = frozenset(fresh) - gap.short_lanes if merge else frozenset()
    aside = [lane for lane in fresh if lane not in into]
    if into:
        for lane in into:
            paths.append(folder / f"{lane}.json")
            atomic_write_text(paths[-1], _dump(fresh[lane]))
        paths.append(folder / REPORT)
        atomic_write_text(paths[-1], _dump(_merged_report(folder, report, into)))
        lines.append(f"partial survey merged into {folder} lane by lane (--partial): "
                     f"{', '.join(sorted(into))} replaced; its other lanes are kept")
    if aside:
        where = beside(folder)
        marker = {"of": str(folder), **gap.to_json()}
        for lane in aside:
            paths.append(where / f"{lane}.json")
            atomic_write_text(paths[-1], _dump({**fresh[lane], "partial": marker}))
        paths.append(where / REPORT)
        part = dict(report)
        part["files"] = _report_files(report, frozenset(aside))
        atomic_write_text(paths[-1], _dump(part))
        fix = ("a lane measured short is never merged: rerun it with every check"
               if merge else "to merge its whole lanes into it, rerun with --partial")
        lines.append(f"partial survey ({gap.describe()}): written beside the survey in "
                     f"{folder}, to {where}, marked partial; {fix}")
    if not merge or aside:
        lines.append(f"{folder}: "
                     + ("unchanged" if not into else "only the merged lanes changed"))
    return Written(tuple(paths), tuple(lines))


def beside(folder: Path) -> Path:
    """A fresh folder beside the documents of ``folder`` for a partial run's outputs."""
    return folder / PARTIAL_DIR / _stamp()


def _names(doc: Mapping[str, Any], key: str) -> list[str]:
    entries = doc.get(key) or ()
    return [str(e.get("lane") or e.get("name")) if isinstance(e, Mapping) else str(e)
            for e in entries]


def document_shrink(old: Mapping[str, Any] | None, new: Mapping[str, Any]) -> str | None:
    """What ``new`` measured less than ``old``, a document of the same kind (its lanes,
    ``our_checks``, ``workflows`` and generated cases), in one line; None when nothing."""
    if not isinstance(old, Mapping) or old.get("kind") != new.get("kind"):
        return None
    lacks = []
    for key in ("lanes", "our_checks", "workflows"):
        gone = [n for n in _names(old, key) if n not in set(_names(new, key))]
        if gone:
            lacks.append(f"{len(gone)} of its {key.replace('_', ' ')} ({', '.join(gone[:6])}"
                         + (", ..." if len(gone) > 6 else "") + ")")
    cases = [int((d.get("generative") or {}).get("case_count") or 0) for d in (old, new)]
    if cases[1] < cases[0]:
        lacks.append(f"{cases[0] - cases[1]} of its {cases[0]} generated cases")
    return "; ".join(f"without {x}" for x in lacks) or None


def read_document(path: Path) -> dict[str, Any] | None:
    """The JSON document at ``path``, or None when there is none (or it cannot be read)."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None
