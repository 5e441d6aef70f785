"""The race measurement's summary and Markdown table, from small measured rows."""

from __future__ import annotations

from typing import Any

from arib.races.report import hardest_quarter, pooled_rate, render, summary


def side(per_runs: list[list[bool]], scheduled: bool = False) -> dict[str, Any]:
    runs = [{"status": "ok", "verdict": "violated" if any(p) else "held", "trials": len(p),
             "violating_trials": sum(p), "per_trial": p, "scheduled": scheduled}
            for p in per_runs]
    firsts = sorted(p.index(True) + 1 for p in per_runs if any(p))
    trials = sum(len(p) for p in per_runs)
    return {"runs": runs, "judged_runs": len(runs),
            "violated_runs": sum(1 for p in per_runs if any(p)), "trials": trials,
            "violating_trials": sum(sum(p) for p in per_runs),
            "rate": sum(sum(p) for p in per_runs) / trials,
            "first_violation": firsts[len(firsts) // 2] if firsts else None}


def measured(key: str, kind: str, before: list[list[bool]], after: list[list[bool]],
             scheduled: bool = False) -> dict[str, Any]:
    return {"entry": {"key": key, "kind": kind}, "before": side(before),
            "after": side(after, scheduled)}


T, F = True, False
ROWS = [
    measured("a", "sampled_mutant", [[F, T], [F, F], [F, T]], [[T, T], [T, F], [T, T]], True),
    measured("b", "sampled_mutant", [[T, T]] * 3, [[T, T]] * 3),
    measured("c", "racy_cell", [[F, F, F, T]] * 3, [[F, T, F, F]] * 3),
    measured("d", "clean_cell", [[F, F, F]] * 3, [[F, F, T]] * 3),
    measured("e", "sampled_mutant", [[F, F]] * 3, [[F, T]] * 3, True),
]


def test_summary_counts_kills_medians_and_the_hardest_quarter() -> None:
    s = summary(ROWS, reruns=3)
    assert (s["entries"], s["mutants"]) == (5, 3)
    assert s["killed_every_rerun_before"] == 1  # only b; a missed one rerun, e never
    assert s["killed_every_rerun_after"] == 3
    # first violations before: a 2, b 1, c 4 (e never): median 2; after: a 1, b 1, c 2, e 2
    assert s["median_first_violation_before"] == 2.0
    assert s["violated_entries_before"] == 3
    assert s["median_first_violation_after"] == 1.5
    # the clean cell is left out of the quarter: 4 rows -> 1, the lowest rate before (e)
    assert s["hardest_quarter"] == {"entries": 1, "before": 0.0, "after": 0.5}
    assert s["clean_cells_violated"] == {"before": 0, "after": 1}
    assert s["unjudged_runs"] == {"before": 0, "after": 0}


def test_hardest_quarter_rounds_up_and_pooled_rate_sums_trials() -> None:
    quarter = hardest_quarter(ROWS[:3])
    assert [r["entry"]["key"] for r in quarter] == ["c"]
    assert pooled_rate(ROWS[:2], "before") == round((2 + 6) / 12, 4)
    assert pooled_rate([], "after") is None


def test_render_has_the_summary_both_groups_and_one_line_per_entry() -> None:
    document = {"entries": {r["entry"]["key"]: r for r in ROWS}, "seed": 7, "reruns": 3,
                "corpus_size": 9, "measurable": 8, "versions": {"after:fam": "1.0"},
                "sides": {"before": {"path": "/b", "commit": "abc"},
                          "after": {"path": "/a", "commit": "def"}},
                "chunks": [{"duration_s": 12.0, "loadavg": [1.0, 2.0, 3.0]}]}
    text = render(document)
    assert "seeded random sample" in text  # 5 of 8 measurable entries
    assert "| mutants killed in every rerun | 1/3 | 3/3 |" in text
    assert "### Entries of checks run under the seeded scheduler after (2 entries, 2 mutants)" \
        in text
    assert "after/before from 0" in text
    assert text.count("\n| `") == 5
    assert "| `a` | sampled_mutant | yes | 0.333 | 0.833 | 2 | 1 | 2/3 | 3/3 |" in text
