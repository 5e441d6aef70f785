"""``races report``: the summary and the table of a race measurement (measurement.md).

The summary, before and after: the share of measured corpus mutants killed in every rerun,
the median trials to first violation (over the entries violated at least once on that side),
and the violation rate per trial on the hardest quarter (the quarter of the mutants and racy
cells with the lowest rate before, the clean cells left out), each also for the entries of
checks that run under the seeded scheduler after.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

SIDES = ("before", "after")


def _median(values: Sequence[float]) -> float | None:
    ordered = sorted(values)
    if not ordered:
        return None
    mid = len(ordered) // 2
    return float(ordered[mid]) if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def _scheduled(row: Mapping[str, Any]) -> bool:
    return any(r.get("scheduled") for r in row["after"]["runs"])


def summary(rows: Sequence[Mapping[str, Any]], reruns: int) -> dict[str, Any]:
    """The figures of measured rows (measurement.json's entries with both sides)."""
    mutants = [r for r in rows if r["entry"]["kind"] == "sampled_mutant"]
    targets = [r for r in rows if r["entry"]["kind"] != "clean_cell"]
    out: dict[str, Any] = {"entries": len(rows), "mutants": len(mutants)}
    for side in SIDES:
        out[f"killed_every_rerun_{side}"] = sum(
            1 for r in mutants if r[side]["violated_runs"] == r[side]["judged_runs"] == reruns)
        firsts = [float(r[side]["first_violation"]) for r in targets
                  if r[side]["first_violation"] is not None]
        out[f"median_first_violation_{side}"] = _median(firsts)
        out[f"violated_entries_{side}"] = len(firsts)
    quarter = hardest_quarter(targets)
    out["hardest_quarter"] = {"entries": len(quarter), **{
        side: pooled_rate(quarter, side) for side in SIDES}}
    out["unjudged_runs"] = {side: sum(len(r[side]["runs"]) - r[side]["judged_runs"]
                                      for r in rows) for side in SIDES}
    out["clean_cells_violated"] = {side: sum(
        1 for r in rows if r["entry"]["kind"] == "clean_cell" and r[side]["violating_trials"])
        for side in SIDES}
    return out


def hardest_quarter(rows: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The quarter (rounded up) of rows with the lowest rate before (unjudged ones left out)."""
    judged = [r for r in rows if r["before"]["rate"] is not None and r["after"]["rate"] is not None]
    judged.sort(key=lambda r: (r["before"]["rate"], r["entry"]["key"]))
    return judged[:math.ceil(len(judged) / 4)]


def pooled_rate(rows: Sequence[Mapping[str, Any]], side: str) -> float | None:
    """Violating trials over trials, summed over rows."""
    trials = sum(int(r[side]["trials"]) for r in rows)
    return round(sum(int(r[side]["violating_trials"]) for r in rows) / trials, 4) \
        if trials else None


def _fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.3g}"
    return str(value)


def _ratio(before: float | None, after: float | None) -> str:
    if before is None or after is None:
        return "-"
    if before == 0:
        return "from 0" if after else "0 both"
    return f"{after / before:.2f}x"


def _summary_lines(title: str, s: Mapping[str, Any]) -> list[str]:
    q = s["hardest_quarter"]
    return [
        f"### {title} ({s['entries']} entries, {s['mutants']} mutants)",
        "",
        "| figure | before | after |",
        "|---|---|---|",
        f"| mutants killed in every rerun | {s['killed_every_rerun_before']}/{s['mutants']} | "
        f"{s['killed_every_rerun_after']}/{s['mutants']} |",
        f"| median trials to first violation (entries violated at least once) | "
        f"{_fmt(s['median_first_violation_before'])} ({s['violated_entries_before']}) | "
        f"{_fmt(s['median_first_violation_after'])} ({s['violated_entries_after']}) |",
        f"| rate per trial, hardest quarter ({q['entries']} entries; after/before "
        f"{_ratio(q['before'], q['after'])}) | {_fmt(q['before'])} | {_fmt(q['after'])} |",
        f"| clean cells with a violation | {s['clean_cells_violated']['before']} | "
        f"{s['clean_cells_violated']['after']} |",
        f"| runs not judged (check or mutant absent there, child crash, harness error) | "
        f"{s['unjudged_runs']['before']} | {s['unjudged_runs']['after']} |",
        "",
    ]


def render(document: Mapping[str, Any]) -> str:
    """measurement.md from measurement.json."""
    entries = document["entries"].values()
    rows = [r for r in entries if "before" in r]
    sched = [r for r in rows if _scheduled(r)]
    chunks = document.get("chunks", [])
    sides = document["sides"]
    lines = [
        "# Race corpus: measured before and after",
        "",
        "Written by `python -m arib races report` from measurement.json (never by hand).",
        "",
        f"- before: `{sides['before']['path']}` at {sides['before']['commit']}; after: "
        f"`{sides['after']['path']}` at {sides['after']['commit']}; versions "
        f"{', '.join(f'{k} {v}' for k, v in (document.get('versions') or {}).items())}.",
        f"- Corpus: {document['corpus_size']} entries, {document.get('measurable')} of them on "
        f"the versions the environments hold. Measured: **{len(rows)}**, in the order of a "
        f"seeded shuffle (seed {document['seed']}), each {document['reruns']} reruns "
        f"(run seeds {document['seed']}..{document['seed'] + document['reruns'] - 1}, the same "
        f"on both sides), at each check's default trial count, both sides in turn in one run.",
        f"- {'The whole measurable corpus was measured.' if len(rows) >= (document.get('measurable') or 0) else 'Only a seeded random sample of the measurable corpus was measured (the CPU time did not allow more): every figure below is of that sample.'}",  # noqa: E501
        f"- Chunks: {len(chunks)}, {sum(c.get('duration_s', 0) for c in chunks):.0f} s in all; "
        f"load average at their ends: "
        f"{', '.join('/'.join(str(x) for x in c.get('loadavg', [])) for c in chunks)}.",
        "",
        "## Summary",
        "",
        *_summary_lines("All measured entries", summary(rows, document["reruns"])),
        *_summary_lines("Entries of checks run under the seeded scheduler after",
                        summary(sched, document["reruns"])),
        "## Entries",
        "",
        "Rate: violating trials / trials over the reruns; first: the median over the violated "
        "reruns of the trial of the first violation (- : none); runs: violated/judged reruns.",
        "",
        "| entry | kind | sched. | rate before | rate after | first before | first after | "
        "runs before | runs after |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in sorted(rows, key=lambda r: r["entry"]["key"]):
        b, a = r["before"], r["after"]
        lines.append(
            f"| `{r['entry']['key']}` | {r['entry']['kind']} | {'yes' if _scheduled(r) else 'no'}"
            f" | {_fmt(b['rate'])} | {_fmt(a['rate'])} | {_fmt(b['first_violation'])} | "
            f"{_fmt(a['first_violation'])} | {b['violated_runs']}/{b['judged_runs']} | "
            f"{a['violated_runs']}/{a['judged_runs']} |")
    return "\n".join(lines) + "\n"
