"""The survey's outputs: one JSON file per lane, the Stryker report (lanes apart), the text.

The mutation-testing-report document keys each file by lane and module
(``sqlite-file/agents/memory/sqlite_session.py``) and each mutant id by lane
(``m-5f3f4d26671a@sqlite-file``): lanes built on one module are never merged. A mutant's
schema status is its status on the lane (``arib.reports.mutation.STATUS_MAP``); its
``coveredBy`` lists the checks whose clean runs execute its lines, ``killedBy`` its killers.
The viewer counts a Timeout as detected; the survey's own scores never do (see
``arib.survey.scores``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from arib.execute import python_version, sdk_version
from arib.ground.files import atomic_write_text
from arib.ground.keys import MutantKey
from arib.ground.model import MutantStatus
from arib.ground.provenance import environment, harness_commit
from arib.reports.mutation import (
    STATUS_MAP,
    SourceText,
    file_entry,
    module_path,
    mutant_entry,
    reason_line,
    report_document,
    validate_mutation_report,
)
from arib.survey.coverage import to_ranges
from arib.survey.engine import SURVEY_ENGINE, SurveyConfig
from arib.survey.lane import LaneSurvey, MutantOutcome

S = MutantStatus
# The viewer's colour bands: green from the local lanes' gate, red below the service lanes'.
SURVEY_THRESHOLDS = {"high": 90, "low": 80}


def lane_documents(surveys: Sequence[LaneSurvey],
                   config: SurveyConfig | None = None) -> list[dict[str, Any]]:
    """One JSON document per lane: the survey's run facts and the lane's outcomes."""
    run = {"harness_commit": harness_commit(), "environment": environment(),
           **(config.to_json() if config is not None else {})}
    return [{"kind": "arib-survey", "engine": SURVEY_ENGINE, "sdk": sdk_version(),
             "python": python_version(), "run": run, **s.to_json()} for s in surveys]


def write_survey(surveys: Sequence[LaneSurvey], out_dir: Path,
                 config: SurveyConfig | None = None) -> list[Path]:
    """One JSON file per lane under ``out_dir``, written atomically."""
    paths = []
    for s, doc in zip(surveys, lane_documents(surveys, config), strict=True):
        path = out_dir / f"{s.lane}.json"
        atomic_write_text(path, json.dumps(doc, indent=1, ensure_ascii=False) + "\n")
        paths.append(path)
    return paths


def survey_set(surveys: Sequence[LaneSurvey], config: SurveyConfig | None = None
               ) -> dict[str, Any]:
    """Every lane's document in one JSON object (what ``survey --json`` writes)."""
    return {"kind": "arib-survey-set", "engine": SURVEY_ENGINE, "sdk": sdk_version(),
            "runs": {k: sum(s.runs.get(k, 0) for s in surveys)
                     for k in sorted({k for s in surveys for k in s.runs})},
            "lanes": lane_documents(surveys, config)}


def _reason(s: LaneSurvey, o: MutantOutcome) -> str:
    lines = [f"{o.status.value}: {o.reason}"]
    if o.lines is None:
        lines.append("its change could not be mapped to lines: judged by every check")
    elif o.status is S.NO_COVERAGE:
        lines.append(f"lines {to_ranges(o.lines)}: no clean run of an applicable check "
                     f"executes them")
    if o.waiver is not None:
        lines.append(f"survivors file ({o.waiver.where}): {o.waiver.category.value}: "
                     f"{o.waiver.reason}")
    results = {r.check_id: r for r in s.results if r.mutant_id == o.mutant.id}
    for check, status in sorted(o.checks.items()):
        if check in results:
            lines.append(reason_line(results[check]))
        elif status is S.NOT_JUDGEABLE:
            lines.append(f"{check}: not judgeable here: {s.clean[check].describe()}")
    return "\n".join(lines)


def survey_mutation_report(surveys: Sequence[LaneSurvey],
                           thresholds: Mapping[str, float] = SURVEY_THRESHOLDS) -> dict[
        str, Any]:
    """The survey in the mutation-testing-report-schema (version 2), one file per lane."""
    files: dict[str, Any] = {}
    check_ids: set[str] = set()
    for s in surveys:
        if not s.outcomes or not s.file:  # a lane whose module could not even be read
            continue
        with open(s.file, encoding="utf-8") as handle:
            src = SourceText(handle.read())
        entries = []
        for o in s.outcomes:
            covered = [c for c, st in o.checks.items() if st is not S.NO_COVERAGE]
            killed = [c for c, st in o.checks.items() if st is S.KILLED]
            runs = [r for r in s.results if r.mutant_id == o.mutant.id]
            check_ids.update(covered)
            entries.append(mutant_entry(
                src, o.mutant, status=STATUS_MAP[o.status], reason=_reason(s, o),
                covered_by=covered, killed_by=killed,
                tests_completed=sum(len(r.runs) for r in runs),
                duration_s=sum(r.duration_s for r in runs),
                key=MutantKey(s.lane, o.mutant.id)))
        files[f"{s.lane}/{module_path(s.module, s.file)}"] = file_entry(src, entries)
    report = report_document(files, sorted(check_ids), thresholds=thresholds)
    validate_mutation_report(report)
    return report


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f}%"


def run_totals(runs: Sequence[Mapping[str, int]]) -> str:
    """One line: the cache's hits, misses and unreadable entries, and check executions per
    judged mutant, summed over ``runs`` (the lanes' ``runs`` counts)."""
    total = {k: sum(r.get(k, 0) for r in runs) for k in (
        "cached", "cache_misses", "cache_unreadable", "run", "mutants_judged", "pairs",
        "keys_version_bound", "executions_unkilled", "executions_killing",
        "executions_beside_kill")}
    looked = total["cached"] + total["cache_misses"] + total["cache_unreadable"]
    rate = f"{100 * total['cached'] / looked:.1f}%" if looked else "n/a"
    per = (f"{total['run'] / total['mutants_judged']:.2f}" if total["mutants_judged"]
           else "n/a")
    return (f"cache: {total['cached']} hits, {total['cache_misses']} misses, "
            f"{total['cache_unreadable']} unreadable (judged again) of {looked} looked up: "
            f"hit rate {rate}; {total['keys_version_bound']} of {total['pairs']} keys bound to "
            f"the SDK version (inputs not named); check executions: {total['run']}, "
            f"{per} per judged mutant ({total['mutants_judged']} mutants){floor(total)}")


def clean_totals(surveys: Sequence[LaneSurvey]) -> str:
    """One line: how many clean bases were reused (``arib.caches.clean``) or run, and the
    kept entries that could not be used (lanes in error left out)."""
    surveys = [s for s in surveys if not s.error]
    bases = [base for s in surveys for base in s.clean.values()]
    reused = sum(1 for base in bases if base.reused)
    changed = sum(s.runs.get("clean_changed", 0) for s in surveys)
    unreadable = sum(s.runs.get("clean_unreadable", 0) for s in surveys)
    unstable = sum(s.runs.get("clean_unstable", 0) for s in surveys)
    return (f"clean bases: {reused} of {len(bases)} reused (every function, module body and "
            f"distribution their runs executed is unchanged), {len(bases) - reused} run; "
            f"{changed} kept entries named code that changed here, {unreadable} unreadable "
            f"(run again), {unstable} once did not hold (never reused)")


def floor(total: Mapping[str, int]) -> str:
    """How far this run's executions are from the fewest its verdicts allow: the mutants no
    check killed ran every check that reaches them, whatever the order; of a killed mutant,
    only the pair that killed it had to run."""
    run = total["run"]
    if not run:
        return ""
    beside = total["executions_beside_kill"]
    return (f": {total['executions_unkilled']} on mutants no check killed (every check that "
            f"reaches them must run), {total['executions_killing']} that killed, {beside} "
            f"beside a kill (a perfect order of checks would save at most these, "
            f"{100 * beside / run:.1f}%)")


def render_text(surveys: Sequence[LaneSurvey], show_diffs: int = 20) -> str:
    """The survey as text: scores per lane and per check, clean bases, runs, survivors."""
    lines = []
    for s in surveys:
        scores = s.scores()
        lines.append(f"{s.lane} ({s.module}): {len(s.outcomes)} generated mutants "
                     f"({s.dropped_noncompiling} dropped: did not compile)")
        if s.error:
            lines.append(f"  ERROR: not surveyed: {s.error}")
            continue
        lines.append(f"  {scores.describe()}")
        for check_id, check_scores in s.check_scores().items():
            lines.append(f"  {check_id}: {check_scores.describe()}")
        for check_id, base in sorted(s.clean.items()):
            if base.abstains:
                lines.append(f"  {check_id}: does not apply here ({base.describe()})")
            elif not base.judgeable:
                lines.append(f"  {check_id}: NOT JUDGEABLE here, its mutants are not run "
                             f"under it: {base.describe()}")
        runs = s.runs
        lines.append(f"  runs: {runs.get('run', 0)} run, {runs.get('cached', 0)} cached, "
                     f"{runs.get('skipped_after_kill', 0)} not run after a kill, "
                     f"{runs.get('saved_by_coverage', 0)} saved by coverage selection, "
                     f"{runs.get('saved_by_compiler_or_claims', 0)} saved as equivalent, "
                     f"duplicate or not applicable, {runs.get('not_judgeable', 0)} not run "
                     f"under a check that is not judgeable here")
        lines.append(f"  {run_totals([runs])}")
        lines.append(f"  {clean_totals([s])}")
        unmapped = s.unmapped()
        if unmapped:
            lines.append(f"  unmapped (judged by every check): "
                         f"{', '.join(o.mutant.id for o in unmapped)}")
        for o in s.outcomes:
            if o.status in (S.EQUIVALENT, S.DUPLICATE, S.NOT_APPLICABLE):
                lines.append(f"  {o.status.value} {o.mutant.id} ({o.mutant.operator} in "
                             f"{o.mutant.qualname}): {o.reason}")
        for entry in s.survivors_file:
            lines.append(f"  survivors file {entry.where}: {entry.mutant_id} "
                         f"{entry.category.value}: {entry.reason}")
        problems = s.survivors_problems()
        for problem in problems:
            if problem.startswith("line "):  # a listed entry the survey contradicts
                lines.append(f"  survivors file: {problem}")
        unlisted = sum(1 for problem in problems if not problem.startswith("line "))
        if unlisted:
            lines.append(f"  survivors file: {unlisted} survivors are not listed (see "
                         f"survivors_file.problems in the JSON)")
        survivors = s.survivors()
        lines.append(f"  survivors: {len(survivors)}")
        for o in survivors[:show_diffs]:
            lines.append(f"  --- {o.mutant.id} {o.status.value} {o.mutant.operator} in "
                         f"{o.mutant.qualname}")
            lines.extend("    " + line for line in o.mutant.diff().rstrip().splitlines())
        if len(survivors) > show_diffs:
            lines.append(f"  ... {len(survivors) - show_diffs} more survivors in the JSON")
    return "\n".join(lines)
