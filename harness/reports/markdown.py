"""Markdown reports generated from result JSON (never written by hand)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from arib.ground.keys import Cell
from arib.ground.model import Counts
from arib.reports.evidence import evidence_key, grouped, lane_list

SYMBOL = {"held": "held", "violated": "**VIOLATED**", "not_applicable": "n/a",
          "error": "**ERROR**"}


def _cell(finding: Mapping[str, Any]) -> str:
    verdict = finding["verdict"]
    text = SYMBOL[verdict]
    if verdict == "violated":
        text += f" {finding['violating_trials']}/{finding['trials']}"
    elif verdict == "held":
        text += f" {finding['trials']}/{finding['trials']}"
    return text


def _table(findings: Sequence[Mapping[str, Any]], lanes: Sequence[str],
           checks: Sequence[str]) -> list[str]:
    index = {Cell.of(f): f for f in findings}
    lines = ["| backend lane | " + " | ".join(checks) + " |",
             "|---|" + "---|" * len(checks)]
    for lane in lanes:
        cells = [(_cell(index[Cell(c, lane)]) if Cell(c, lane) in index else "not run")
                 for c in checks]
        lines.append(f"| `{lane}` | " + " | ".join(cells) + " |")
    return lines


def _counts(f: Mapping[str, Any]) -> str:
    return ", ".join(f"{k} {v}" for k, v in Counts.from_json(f["counts"]).labelled().items()
                     if v) or "none"


def _lane_rows(group: Sequence[Mapping[str, Any]]) -> list[str]:
    """One row per lane: what differs between lanes (trials, counts, modes, replay)."""
    lines = ["| lane | verdict | trials violated | counts | outcome modes | replay |",
             "|---|---|---|---|---|---|"]
    for f in group:
        modes = ", ".join(f"{k}: {v}" for k, v in f.get("modes", {}).items()) or "-"
        replay = f"`{f['replay']}`" if f.get("replay") else "-"
        lines.append(f"| `{f['target']}` | {f['verdict']} | {f['violating_trials']}/"
                     f"{f['trials']} | {_counts(f)} | {modes} | {replay} |")
    return lines


def schedule_line(f: Mapping[str, Any]) -> str:
    """How the replayed trial was scheduled and how much of the run the scheduler controlled,
    e.g. ``random, 216 decisions, all controlled; over 3 trials 648 of 648 controlled``."""
    parts = []
    schedule = f.get("schedule")
    if schedule:
        loose = schedule.get("uncontrolled", 0)
        parts.append(f"{schedule['strategy']}, {schedule['decisions']} decisions, "
                     + (f"{loose} uncontrolled: a replay may not reproduce it" if loose
                        else "all controlled: a replay reproduces it"))
    control = f.get("control")
    if control:
        total = control.get("decisions", 0)
        share = control.get("controlled", 0) / total if total else 1.0
        parts.append(f"over {f.get('trials', 0)} trial(s) {control.get('controlled', 0)} of "
                     f"{total} decisions controlled ({share:.0%})")
    return "; ".join(parts)


def _shown_evidence(shared: Sequence[Mapping[str, Any]]) -> list[str]:
    """The evidence of the first finding of ``shared``, naming the lanes that share it."""
    f, others = shared[0], [o["target"] for o in shared[1:]]
    lines = [f"Evidence on `{f['target']}`"
             + (f", the same on {lane_list(others)} (only ids and seeds differ):" if others
                else ":"),
             "",
             f"- seeds: {', '.join(str(s) for s in f['seeds'][:5])}"
             + (" ..." if len(f["seeds"]) > 5 else "")]
    if f.get("reason"):
        lines.append(f"- reason: {f['reason']}")
    for sample in f.get("samples", [])[:3]:
        lines.append(f"- sample: `{sample[:300]}`")
    if f.get("ops"):
        lines.append("- operations, in order:")
        lines += [f"  {i}. `{op}`" for i, op in enumerate(f["ops"], 1)]
    if f.get("replay"):
        lines.append(f"- replay: `{f['replay']}`")
    if f.get("schedule") or f.get("control"):
        lines.append(f"- schedule: {schedule_line(f)}")
    if f.get("traceback"):
        lines += ["", "```", f["traceback"].strip()[-1500:], "```"]
    return lines + [""]


def _evidence(group: Sequence[Mapping[str, Any]]) -> list[str]:
    """One invariant's violations and errors: its lanes in a table, each evidence once."""
    first = group[0]
    tally = Counter(f["verdict"] for f in group)
    lines = [f"### {first['invariant_id']}: "
             + ", ".join(f"{v} on {n} lane{'s' if n > 1 else ''}" for v, n in tally.items()),
             "",
             f"- invariant: {first['invariant']}",
             f"- fault: {first['fault']}",
             "",
             *_lane_rows(group),
             ""]
    for shared in grouped(group, evidence_key):
        lines += _shown_evidence(shared)
    return lines


def _admission(admissions: Sequence[Mapping[str, Any]]) -> list[str]:
    lines = ["## Admission", "",
             "A check is measured only when it holds on the reference backend in every rerun "
             "and every paired mutant is killed (or waived as equivalent, shown below).", "",
             "| check | admitted | mutants killed | not judgeable here | kinds | reasons |",
             "|---|---|---|---|---|---|"]
    waivers, unjudged = [], []
    for a in admissions:
        results = a["results"]
        judged = [r for r in results if r.get("judgeable", True)]
        killed = sum(1 for r in judged if r["status"] == "killed")
        kinds = Counter(r["kind"] for r in results)
        kind_text = ", ".join(f"{k} {v}" for k, v in sorted(kinds.items()))
        reasons = "; ".join(a["reasons"]) or "-"
        lines.append(f"| {a['check_id']} | {'yes' if a['admitted'] else '**no**'} | "
                     f"{killed}/{len(judged)} | {len(results) - len(judged)} | {kind_text} | "
                     f"{reasons[:400]} |")
        waivers += [f"- {a['check_id']} / `{r['mutant_id']}`: {r.get('evidence')}"
                    for r in results if r["status"] == "equivalent"]
        unjudged += [f"- {a['check_id']} / `{r['mutant_id']}` ({r['target']}): "
                     f"{r.get('evidence')}" for r in results if not r.get("judgeable", True)]
    lines.append("")
    if waivers:
        lines += ["Equivalent mutants (waived by the check's author, with the reason):", "",
                  *waivers, ""]
    if unjudged:
        lines += ["Mutants not judgeable on this SDK version (their clean backend already "
                  "breaks the invariant, so a kill would prove nothing):", "", *unjudged, ""]
    return lines


def _seed(doc: Mapping[str, Any]) -> Any:
    """The family's seed module (its record's ``seed``) when this run is of the seed's
    version, else None."""
    from arib.ground.errors import UnknownNameError
    from arib.ground.family import get_family

    try:
        family = get_family(doc["sdk"]["name"])
    except UnknownNameError:  # a run of a family not installed here: no seed to compare with
        return None
    seed = family.resolve("seed") if family.seed else None
    return seed if seed is not None and doc["sdk"]["version"] == seed.SEED_SDK else None


def _seed_comparison(findings: Sequence[Mapping[str, Any]], seed: Any, family: str
                     ) -> list[str]:
    SEED_CELLS, SEED_NOTES = seed.SEED_CELLS, seed.SEED_NOTES  # noqa: N806 - the module's names
    lines = [f"## Against the seed's published cells ({family} {seed.SEED_SDK})", ""]
    differ = []
    for f in findings:
        seed = SEED_CELLS.get(Cell.of(f))
        if seed is not None and seed != f["verdict"]:
            differ.append((f, seed))
    compared = sum(1 for f in findings if Cell.of(f) in SEED_CELLS)
    if not differ:
        lines.append(f"All {compared} cells that the seed published match it.")
    else:
        lines.append(f"{len(differ)} of {compared} cells differ from the seed:")
        lines.append("")
        for f, seed in differ:
            why = "; ".join(f.get("samples", [])[:1]) or f.get("reason") or "see evidence"
            note = SEED_NOTES.get(f["invariant_id"], "")
            lines.append(f"- {f['invariant_id']} on `{f['target']}`: seed {seed}, here "
                         f"{f['verdict']} (modes {f.get('modes')}; {why})"
                         + (f". Why: {note}" if note else ""))
    return lines + [""]


def _coverage_line(doc: Mapping[str, Any]) -> list[str]:
    """One line on a partial run (a subset of lanes or checks), from its recorded coverage."""
    coverage = doc.get("coverage")
    if not coverage or coverage["every_lane"] and coverage["every_check"]:
        return []
    parts = []
    if not coverage["every_lane"]:
        parts.append("lanes " + ", ".join(f"`{n}`" for n in coverage["lanes_selected"]))
    if not coverage["every_check"]:
        parts.append("checks " + ", ".join(coverage["checks_selected"]))
    return [f"- **partial run**: selected only {'; '.join(parts)}"]


def render_markdown(doc: Mapping[str, Any]) -> str:
    """The report of one run: the backends x invariants table and the evidence behind it."""
    findings = doc["findings"]
    sdk = doc["sdk"]["version"]
    lanes = doc["parameters"]["lanes"]
    checks = sorted({f["invariant_id"] for f in findings}) or sorted(doc["parameters"]["checks"])
    tally = Counter(f["verdict"] for f in findings)
    env = doc["environment"]
    lines = [
        f"# Integrity bench: {doc['sdk']['name']} {sdk}",
        "",
        "Generated from the JSON result by `python -m arib report`; do not edit by hand.",
        "",
        f"- started {doc['started']}, {doc['duration_s']:.1f} s; harness commit "
        f"`{doc['harness_commit']}`; lock `{doc['lock_hash'][:16]}`",
        f"- Python {env['python']} on {env['platform']}; run seed "
        f"{doc['parameters']['run_seed']}; event loop {doc['parameters']['loop']}"
        + ("" if doc["parameters"]["complete"] else "; **run interrupted: partial results**"),
        *_coverage_line(doc),
        f"- {len(findings)} findings: " + ", ".join(
            f"{tally.get(v, 0)} {v}" for v in ("held", "violated", "not_applicable", "error")),
        "",
        "## Backends x invariants",
        "",
        *_table(findings, lanes, checks),
        "",
        "`held k/k`: kept in every trial; `VIOLATED v/k`: broken in v of k trials; `n/a`: the "
        "runtime never offered the contract (verified against the object); `ERROR`: the "
        "harness could not judge.",
        "",
    ]
    if doc.get("not_measured"):
        lines += ["## Not measured", ""]
        lines += [f"- `{n['name']}`: {n['reason']}" for n in doc["not_measured"]]
        lines.append("")
    if doc.get("remeasured"):
        lines += ["## Measured again", "",
                  "Every trial of these cells flipped against the accepted baseline, too few "
                  "trials for Fisher's exact test to judge; each was measured again in this run "
                  "with the trials that let it, and the table shows that second measurement.",
                  ""]
        lines += [f"- `{r['check']}` on `{r['lane']}`: {r['first']} -> {r['second']} with "
                  f"{r['trials']} trials (baseline {r['baseline']})" for r in doc["remeasured"]]
        lines.append("")
    seed = _seed(doc)
    if seed is not None:
        lines += _seed_comparison(findings, seed, doc["sdk"]["name"])
    lines += _admission(doc["admission"])
    bad = [f for f in findings if f["verdict"] in ("violated", "error")]
    if bad:
        lines += ["## Evidence", ""]
        for group in grouped(bad, lambda f: f["invariant_id"]):
            lines += _evidence(group)
    return "\n".join(lines).rstrip() + "\n"
