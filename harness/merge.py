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

from arib.coverage import from_ranges, to_ranges
from arib.ground.errors import UsageError
from arib.ground.model import ExitCode, MutantStatus, Verdict
from arib.mutation_report import report_document, validate_mutation_report
from arib.results import atomic_write_text
from arib.shard import Split
from arib.survey_lane import status_under
from arib.survey_scores import Scores
from arib.survivors import Category, Entry, disagreements

MANIFEST = "shard.json"
S = MutantStatus


def write_manifest(out: Path, command: str, split: Split, extra: Mapping[str, Any]) -> Path:
    """Write a shard's manifest into its output folder; returns its path."""
    path = out / MANIFEST
    doc = {"kind": "arib-shard", "command": command, "shard": split.to_json(), **extra}
    atomic_write_text(path, json.dumps(doc, indent=1, ensure_ascii=False) + "\n")
    return path


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise UsageError(f"shard output {str(path)!r} cannot be read ({exc}); pass the folder "
                         f"a `survey --shard k/n --write --out DIR` wrote") from None


def load_shards(paths: Sequence[Path]) -> list[tuple[Path, dict[str, Any]]]:
    """Each shard output with its manifest (a survey folder's shard.json, or the admission
    document itself), sorted by k; refuses shards that do not fit together."""
    shards = []
    for path in paths:
        manifest = path / MANIFEST if path.is_dir() else path
        doc = _read_json(manifest) if manifest.is_file() else {}
        if not isinstance(doc, dict) or "shard" not in doc or "command" not in doc:
            raise UsageError(f"{str(path)!r} is not a shard's output (it holds no {MANIFEST} "
                             f"or shard record): the rule: merge takes what sharded runs "
                             f"wrote; fix: run `survey --shard k/n --write --out {path}` or "
                             f"`admit --shard k/n --json {path}`")
        shards.append((path, doc))
    check_compatible([m for _, m in shards], [str(p) for p, _ in shards])
    return sorted(shards, key=lambda s: int(s[1]["shard"]["k"]))


def check_compatible(manifests: Sequence[Mapping[str, Any]], names: Sequence[str]) -> None:
    """Refuse shards of different commands, n, arguments, commits or durations, and a k
    that is missing or given twice."""
    if not manifests:
        raise UsageError("merge needs shard outputs: pass every shard's folder")
    first, name0 = manifests[0], names[0]
    for m, name in zip(manifests[1:], names[1:], strict=True):
        _check_identity(first["shard"], name0, m["shard"], name)
        for what, a, b in (("command", first["command"], m["command"]),
                           ("n", first["shard"]["n"], m["shard"]["n"]),
                           ("recorded durations", first["shard"]["durations"],
                            m["shard"]["durations"])):
            if a != b:
                raise UsageError(f"shard {name!r} has {what} {b!r} but {name0!r} has {a!r}: "
                                 f"the rule: every shard runs the same command on the same "
                                 f"commit with the same n and durations; fix: run the shards "
                                 f"again alike")
        if m["shard"]["fingerprint"] != first["shard"]["fingerprint"]:
            args0, args = first["shard"]["arguments"], m["shard"]["arguments"]
            diff = sorted(k for k in {*args0, *args} if args0.get(k) != args.get(k))
            raise UsageError(
                f"shard {name!r} was run with other arguments than {name0!r} (differing: "
                + ", ".join(f"{k}={args.get(k)!r} vs {args0.get(k)!r}" for k in diff)
                + "): the rule: every shard gets the same arguments but --shard; fix: run "
                  "them again with the same arguments")
    n = int(first["shard"]["n"])
    ks = [int(m["shard"]["k"]) for m in manifests]
    twice = sorted({k for k in ks if ks.count(k) > 1})
    missing = sorted(set(range(1, n + 1)) - set(ks))
    if twice or missing:
        what = (f"shard {twice[0]}/{n} is given twice" if twice
                else f"shard {missing[0]}/{n} is missing")
        raise UsageError(f"{what} (got {', '.join(f'{k}/{n}' for k in sorted(ks))}): the "
                         f"rule: merge takes each of the {n} shards exactly once; fix: pass "
                         f"every shard's output once")


# What a shard measured (arib.shard.measured_identity), with the name a refusal gives it.
IDENTITY = (("family", "family"), ("version", "version of the family's distribution"),
            ("lock", "lock hash"), ("commit", "harness commit"))


def _check_identity(first: Mapping[str, Any], name0: str, shard: Mapping[str, Any],
                    name: str) -> None:
    """Refuse a shard that measured another family, version, lock or harness commit."""
    for key, what in IDENTITY:
        a, b = first.get(key), shard.get(key)
        if a != b:
            raise UsageError(f"shard {name!r} has {what} {b!r} but {name0!r} has {a!r}: the "
                             f"rule: merged shards measured the same family version, installed "
                             f"from the same lock, with the same harness commit; fix: run "
                             f"shard {shard.get('spec', '?')} again in the environment of "
                             f"{name0!r} (`nox -s bench` installs it from the lock)")


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
    from arib.survey_scores import gate, parse_fail_under

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
        docs = [_read_json(p / f"{lane}.json") for p, m in shards if lane in m["lanes"]]
        disagree = clean_disagreements(docs)
        lines.extend(f"warning: {d}" for d in disagree)
        lanes[lane] = merge_lane(docs, ids, manifests[0]["checks"], n)
        if disagree:  # the lane file keeps shard 1's clean bases and says where others differ
            lanes[lane]["run"]["clean_disagreements"] = disagree
    for lane, doc in lanes.items():
        path = out / f"{lane}.json"
        atomic_write_text(path, json.dumps(doc, indent=1, ensure_ascii=False) + "\n")
        written.append(path)
    reports = [_read_json(p / "mutation-report.json") for p, _ in shards
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
        [_read_json(p / f"{lane}.json") for p, m in shards if lane in m["lanes"]])]
    if judgeability:  # a shard skipped checks another shard judged: the lane is not whole
        errors.update({d.split(" ", 1)[0]: f"shards disagree on a clean base: {d}"
                       for d in judgeability})
    if errors or not sum(s.covered for s in scores.values()):
        lines.append("error: " + ("; ".join(f"{k}: {v}" for k, v in errors.items())
                                  or "the shards judged no mutant: nothing was measured"))
        return written, lines, int(ExitCode.ERROR_OR_NOTHING)
    passed = all(line.passed for line in results)
    return written, lines, int(ExitCode.OK if passed else ExitCode.VIOLATED)


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
    from arib.report import render_markdown
    from arib.results import new_run_id, run_stem, validate

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
    have = {(f["invariant_id"], f["target"]) for f in findings}
    missing = [f"{c} on {lane}" for c in admitted for lane in measured if (c, lane) not in have]
    if missing:
        gaps.append(f"{len(missing)} cell(s) have no finding in any shard: "
                    f"{', '.join(missing[:5])}")
    return gaps


def merge_outputs(paths: Sequence[Path], out: Path) -> tuple[list[Path], list[str], int]:
    """Merge survey shard folders, or admission or bench shard documents."""
    if not paths or not paths[0].is_file():
        return merge_survey(paths, out)
    kind = _read_json(paths[0]).get("kind")
    return (merge_bench if kind == "arib-bench-run" else merge_admissions)(paths, out)
