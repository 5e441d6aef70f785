"""``python -m arib merge`` of admission and bench shards: the documents one run writes.

An ``admit --shard k/n --json PATH`` or ``bench --shard k/n`` shard writes one document with
its manifest; the merge refuses shards that were not made to be merged (arib.runs.shard), then
unions the admissions or findings in the unsharded order. Survey shards: arib.survey.merge.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from arib.ground.errors import UsageError
from arib.ground.files import atomic_write_text
from arib.ground.keys import Cell
from arib.ground.model import ExitCode, Verdict
from arib.runs.shard import Split, load_shards


def admission_document(checks: Sequence[str], admissions: Sequence[Any],
                       split: Split | None) -> dict[str, Any]:
    """What ``admit --json`` writes: every admission, the checks asked for, the shard."""
    from arib.execute import sdk_version
    from arib.ground.family import active_family

    return {"kind": "arib-admission", "command": "admit",
            "sdk": {"name": active_family().name, "version": sdk_version()},
            "checks": list(checks), "admissions": [a.to_json() for a in admissions],
            **({"shard": split.to_json()} if split is not None else {})}


def merge_admissions(paths: Sequence[Path], out: Path) -> tuple[list[Path], list[str], int]:
    """Merge ``admit --shard k/n --json`` documents into ``out/admission.json``."""
    shards = load_shards(paths)
    first = shards[0][1]
    by_check = {a["check_id"]: a for _, doc in shards for a in doc["admissions"]}
    merged = {k: v for k, v in first.items() if k != "shard"}
    absent = [c for c in first["checks"] if c not in by_check]
    if absent:
        raise UsageError(f"no shard admitted {', '.join(map(repr, absent))}: the rule: every "
                         f"check the shards were asked for is in one shard's output; fix: "
                         f"rerun the shard that should have it, with the same arguments")
    merged["admissions"] = [by_check[c] for c in first["checks"]]
    merged["merged_shards"] = int(first["shard"]["n"])
    path = out / "admission.json"
    atomic_write_text(path, json.dumps(merged, indent=1, ensure_ascii=False) + "\n")
    admitted = sum(a["admitted"] for a in merged["admissions"])
    lines = [f"{admitted}/{len(merged['admissions'])} checks admitted"]
    return [path], lines, int(ExitCode.OK if admitted == len(merged["admissions"])
                              else ExitCode.VIOLATED)


def _union(docs: Sequence[Mapping[str, Any]], key: str, name: str,
           order: Sequence[str]) -> list[Any]:
    """The entries of ``key`` in every doc, once each by ``name``, in ``order``."""
    found = {e[name]: e for doc in docs for e in doc.get(key, ())}
    return [found[n] for n in order if n in found]


def merge_bench(paths: Sequence[Path], out: Path) -> tuple[list[Path], list[str], int]:
    """Merge ``bench --shard k/n`` result files into one run's JSON and Markdown in ``out``."""
    import datetime as dt

    from arib.ground.model import merge_verdicts, verdict_exit_code
    from arib.reports.markdown import render_markdown
    from arib.runs.results import new_run_id, run_stem, validate

    docs = [d for _, d in load_shards(paths)]
    first = docs[0]
    checks = list(first["parameters"]["checks"])
    lanes = list(first["coverage"]["lanes_selected"])
    cell = {c: i for i, c in enumerate(checks)}, {lane: i for i, lane in enumerate(lanes)}
    findings = sorted((f for d in docs for f in d["findings"]),
                      key=lambda f: (cell[0][f["invariant_id"]], cell[1][f["target"]]))
    admission = _union(docs, "admission", "check_id", checks)
    admitted = {a["check_id"] for a in admission if a["admitted"]}
    measured = [lane for lane in lanes if any(lane in d["coverage"]["lanes_measured"]
                                              for d in docs)]
    complete = all(d["coverage"]["complete"] for d in docs)
    coverage = {k: v for k, v in first["coverage"].items() if k != "shard"}
    coverage.update(
        lanes_measured=measured, checks_admitted=[c for c in checks if c in admitted],
        lanes_not_measured={k: v for d in docs for k, v in d["coverage"]["lanes_not_measured"]
                            .items()},
        checks_not_measured={k: v for d in docs for k, v in d["coverage"][
            "checks_not_measured"].items()}, complete=complete)
    coverage["partial"] = not (complete and coverage["every_lane"] and coverage["every_check"])
    merged = {k: v for k, v in first.items() if k not in ("shard", "command")}
    merged.update(
        started=min(d["started"] for d in docs), run_id=new_run_id(),
        duration_s=max(d["duration_s"] for d in docs), merged_shards=len(docs),
        parameters={**first["parameters"], "lanes": measured, "complete": complete},
        admission=admission, findings=findings, coverage=coverage,
        not_measured=_union(docs, "not_measured", "name", lanes),
        lanes=_union(docs, "lanes", "name", lanes),
        services={k: v for d in docs for k, v in d.get("services", {}).items()})
    if any("startup" in d for d in docs):  # the soonest of the shards (each its own process)
        merged["startup"] = {key: min((d["startup"][key] for d in docs if d.get("startup", {})
                                       .get(key) is not None), default=None)
                             for key in ("first_child_s", "first_cell_s")}
    validate(merged)
    stem = run_stem(dt.datetime.fromisoformat(merged["started"]), merged["run_id"],
                    merged["sdk"]["version"], merged["sdk"]["name"])
    json_path, md_path = out / f"{stem}.json", out / f"{stem}.md"
    atomic_write_text(json_path, json.dumps(merged, indent=1, ensure_ascii=False) + "\n",
                      replace=False)
    atomic_write_text(md_path, render_markdown(merged), replace=False)
    code = verdict_exit_code(merge_verdicts(Verdict(f["verdict"]) for f in findings))
    tally = {v: [f["verdict"] for f in findings].count(v) for v in
             sorted({f["verdict"] for f in findings})}
    lines = [f"{len(findings)} findings: " + ", ".join(f"{n} {v}" for v, n in tally.items())]
    gaps = _bench_gaps(docs, findings, [c for c in checks if c in admitted], measured)
    if gaps:  # the merged run is less than the shards' arguments asked for: never exit 0
        lines += [f"error: {gap}" for gap in gaps]
        code = ExitCode.ERROR_OR_NOTHING
    return [json_path, md_path], lines, int(code)


def _bench_gaps(docs: Sequence[Mapping[str, Any]], findings: Sequence[Mapping[str, Any]],
                admitted: Sequence[str], measured: Sequence[str]) -> list[str]:
    """Why the merged bench is not whole: an interrupted shard, a check the shards admitted
    differently, an admitted check on a measured lane with no finding."""
    gaps = [f"shard {d['coverage'].get('shard', {}).get('spec', '?')} was interrupted"
            for d in docs if not d["coverage"]["complete"]]
    verdicts: dict[str, set[bool]] = {}
    for d in docs:
        for a in d.get("admission", ()):
            verdicts.setdefault(a["check_id"], set()).add(bool(a["admitted"]))
    gaps += [f"shards disagree on admitting {c}" for c, seen in verdicts.items() if len(seen) > 1]
    have = {Cell.of(f) for f in findings}
    missing = [cell for c in admitted for lane in measured if (cell := Cell(c, lane)) not in have]
    if missing:
        gaps.append(f"{len(missing)} cell(s) have no finding in any shard: "
                    f"{', '.join(map(str, missing[:5]))}")
    return gaps
