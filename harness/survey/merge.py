"""``python -m arib merge``: shard outputs combined into the document one run gives.

A survey shard (``survey --shard k/n --write --out DIR``) leaves in ``DIR`` its lane files,
its ``mutation-report.json`` and ``shard.json``, the manifest: the spec, the fingerprint of
the shared arguments and commit, the digest of the durations it balanced by, and each
lane's mutant order. The merge refuses shards that were not made to be merged (a different
command, ``n``, fingerprint or durations; a ``k`` missing or given twice), then unions the
outcomes and pair results in the unsharded order and computes again every number derived
from them (scores, per-check scores, survivors, the survivors file's problems, run counts).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from arib.ground.errors import UsageError
from arib.ground.files import atomic_write_text
from arib.ground.model import ExitCode, MutantStatus, Verdict
from arib.reports.mutation import report_document, validate_mutation_report
from arib.runs.shard import load_shards, read_json
from arib.survey.coverage import from_ranges, to_ranges
from arib.survey.lane import status_under
from arib.survey.scores import Scores
from arib.survey.survivors import Category, Entry, disagreements

S = MutantStatus


def _merge_coverage(docs: Sequence[Mapping[str, Any]], outcomes: Sequence[Mapping[str, Any]]
                    ) -> dict[str, Any]:
    lines: dict[str, frozenset[int]] = {}
    for doc in docs:
        for check, ranges in doc["coverage"]["checks"].items():
            lines[check] = lines.get(check, frozenset()) | from_ranges(ranges)
    return {"executable": docs[0]["coverage"]["executable"],
            "checks": {c: to_ranges(v) for c, v in sorted(lines.items())},
            "unmapped": [o["id"] for o in outcomes if o["unmapped"]]}


def merge_lane(docs: Sequence[Mapping[str, Any]], order: Sequence[str],
               checks: Sequence[str], n: int) -> dict[str, Any]:
    """One lane's document from the shards that surveyed part of it."""
    by_id = {o["id"]: o for doc in docs for o in doc["outcomes"]}
    lane = docs[0]["lane"]
    missing = [m for m in order if m not in by_id]
    if missing:
        raise UsageError(f"lane {lane!r}: mutant {missing[0]!r} is in no shard's output: the "
                         f"rule: the shards together judge every mutant; fix: pass every "
                         f"shard's folder, written by the same version of the harness")
    outcomes = [by_id[m] for m in order] or [o for doc in docs for o in doc["outcomes"]]
    where = {m: i for i, m in enumerate(order)}
    rank = {c: i for i, c in enumerate(checks)}
    results = sorted((r for doc in docs for r in doc["results"]),
                     key=lambda r: (where.get(r["mutant_id"], 0), rank.get(r["check_id"], 0)))
    survivors = {s["id"]: s for doc in docs for s in doc["survivors"]}
    statuses = [S(o["status"]) for o in outcomes]
    clean = docs[0]["clean"]
    applicable = sorted(c for c, base in clean.items() if not (base["verdicts"] and all(
        v == Verdict.NOT_APPLICABLE.value for v in base["verdicts"])))
    entries = [Entry(e["lane"], e["mutant_id"], Category(e["category"]), e["reason"],
                     e["line"]) for e in docs[0]["survivors_file"]["entries"]]
    runs: dict[str, int] = {}
    for doc in docs:
        for key, value in doc["runs"].items():
            runs[key] = runs.get(key, 0) + value
    errors = [doc["error"] for doc in docs if doc["error"]]
    merged = dict(docs[0])
    merged["run"] = {k: v for k, v in docs[0]["run"].items() if k != "shard"}
    merged["run"]["merged_shards"] = n
    merged.update({
        "status": "error" if errors else "ok", "error": errors[0] if errors else None,
        "mutants": len(outcomes), "scores": Scores.of(statuses).to_json(),
        "checks": {c: Scores.of([status_under(S(o["status"]), {
            k: S(v) for k, v in o["checks"].items()}, c) for o in outcomes]).to_json()
            for c in applicable},
        "runs": runs, "coverage": _merge_coverage(docs, outcomes), "outcomes": outcomes,
        "results": results,
        "survivors": [survivors[o["id"]] for o in outcomes if o["id"] in survivors],
        "survivors_file": {"entries": docs[0]["survivors_file"]["entries"],
                           "problems": list(disagreements(lane, entries, {
                               o["id"]: (o["status"], o["survivors_file"] is not None
                                         and o["status"] == S.EQUIVALENT.value)
                               for o in outcomes}))},
    })
    return merged


def clean_disagreements(docs: Sequence[Mapping[str, Any]]) -> list[str]:
    """Where shards' clean bases of one lane differ (each shard runs them itself)."""
    first = {c: b.get("verdicts") for c, b in docs[0]["clean"].items()}
    return [f"{docs[0]['lane']} {c}: clean verdicts {b.get('verdicts')!r} in one shard, "
            f"{first.get(c)!r} in another" for doc in docs[1:]
            for c, b in doc["clean"].items() if b.get("verdicts") != first.get(c)]


def _judgeability_disagreements(docs: Sequence[Mapping[str, Any]]) -> list[str]:
    """The clean-base disagreements that change which checks judged the lane's mutants."""
    first = {c: b.get("judgeable") for c, b in docs[0]["clean"].items()}
    return [f"{docs[0]['lane']} {c}: judgeable in one shard, not in another"
            for doc in docs[1:] for c, b in doc["clean"].items()
            if b.get("judgeable") != first.get(c)]


def merge_reports(reports: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The shards' mutation-testing reports as one (files united, mutants by location)."""
    files: dict[str, Any] = {}
    for report in reports:
        for path, entry in report["files"].items():
            into = files.setdefault(path, {**entry, "mutants": []})
            into["mutants"].extend(entry["mutants"])
    check_ids: set[str] = set()
    for entry in files.values():
        entry["mutants"].sort(key=lambda m: (m["location"]["start"]["line"],
                                             m["location"]["start"]["column"], m["id"]))
        check_ids.update(c for m in entry["mutants"] for c in m.get("coveredBy", ()))
    merged = report_document(dict(sorted(files.items())), sorted(check_ids),
                             thresholds=reports[0]["thresholds"] if reports else {})
    validate_mutation_report(merged)
    return merged


def merge_survey(paths: Sequence[Path], out: Path) -> tuple[list[Path], list[str], int]:
    """Merge survey shard folders into ``out``: the written paths, the lines to print and
    the exit code the unsharded survey would give (its score gate applied)."""
    from arib.survey.scores import gate, parse_fail_under

    shards = load_shards(paths)
    manifests = [m for _, m in shards]
    n = int(manifests[0]["shard"]["n"])
    order: dict[str, list[str]] = {}
    for m in manifests:  # lanes in the order the shards list them
        for lane, ids in m["lanes"].items():
            order.setdefault(lane, ids)
    written: list[Path] = []
    lines: list[str] = []
    lanes: dict[str, dict[str, Any]] = {}
    for lane, ids in order.items():
        docs = [read_json(p / f"{lane}.json") for p, m in shards if lane in m["lanes"]]
        disagree = clean_disagreements(docs)
        lines.extend(f"warning: {d}" for d in disagree)
        lanes[lane] = merge_lane(docs, ids, manifests[0]["checks"], n)
        if disagree:  # the lane file keeps shard 1's clean bases and says where others differ
            lanes[lane]["run"]["clean_disagreements"] = disagree
    for lane, doc in lanes.items():
        path = out / f"{lane}.json"
        atomic_write_text(path, json.dumps(doc, indent=1, ensure_ascii=False) + "\n")
        written.append(path)
    reports = [read_json(p / "mutation-report.json") for p, _ in shards
               if (p / "mutation-report.json").is_file()]
    path = out / "mutation-report.json"
    atomic_write_text(path, json.dumps(merge_reports(reports), indent=1,
                                       ensure_ascii=False) + "\n")
    written.append(path)
    scores = {lane: Scores.of([S(o["status"]) for o in d["outcomes"]])
              for lane, d in lanes.items() if not d["error"]}
    errors = {lane: f"lane error: {d['error']}" for lane, d in lanes.items() if d["error"]}
    values = manifests[0]["shard"]["arguments"].get("fail_under") or []
    named = {v.partition("=")[0] for v in values if "=" in v}
    results = gate(scores, errors, parse_fail_under(values, [*lanes, *named]))
    lines.extend(f"{lane}: {s.describe()}" for lane, s in scores.items())
    lines.extend(f"gate: {line.describe()}" for line in results)
    judgeability = [d for lane in order for d in _judgeability_disagreements(
        [read_json(p / f"{lane}.json") for p, m in shards if lane in m["lanes"]])]
    if judgeability:  # a shard skipped checks another shard judged: the lane is not whole
        errors.update({d.split(" ", 1)[0]: f"shards disagree on a clean base: {d}"
                       for d in judgeability})
    if errors or not sum(s.covered for s in scores.values()):
        lines.append("error: " + ("; ".join(f"{k}: {v}" for k, v in errors.items())
                                  or "the shards judged no mutant: nothing was measured"))
        return written, lines, int(ExitCode.ERROR_OR_NOTHING)
    passed = all(line.passed for line in results)
    return written, lines, int(ExitCode.OK if passed else ExitCode.VIOLATED)
