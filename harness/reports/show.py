"""``python -m arib show ID``: one mutant's diff, lane, operator, status and killers; or one
finding of the newest bench run (its id is its cell, ``CHECK on LANE``).

A hand-written mutant is found by name or id; a generated one by id among the pools of the
active family's lanes (generated now from the installed source, as the survey does). Its
status and the checks that killed it come from the survey of this version written under
``results/survey/<family>-<version>/`` when there is one; else the output says it was never
surveyed here.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from arib.execute import sdk_version
from arib.ground.errors import MutantDefinitionError, UnknownNameError
from arib.ground.family import active_family
from arib.ground.model import MutantKind
from arib.mutants.base import MutantSpec


def find_mutant(key: str, lanes: Sequence[str]) -> MutantSpec:
    """A hand-written mutant by name or id, else a generated one by id on ``lanes``; a lane
    whose source cannot be mutated (a plugin lane's factory, say) is passed over, and named
    only when the mutant is found nowhere."""
    from arib.mutants.pool import find_generated
    from arib.mutants.registry import get_mutant

    try:
        return get_mutant(key)
    except UnknownNameError:
        pass
    skipped: list[str] = []
    for lane in lanes:
        try:
            found = find_generated(key, (lane,))
        except MutantDefinitionError as exc:  # that lane generates nothing to look in
            skipped.append(f"{lane} ({exc})")
            continue
        if found is not None:
            return found
    passed = f" (passed over, no mutants generated: {'; '.join(skipped)})" if skipped else ""
    raise UnknownNameError(
        f"unknown mutant {key!r}: no hand-written mutant has that name or id, and no lane "
        f"of {', '.join(lanes)} generates it from the installed source{passed}; the ids are "
        f"listed by `python -m arib list` (hand-written) and `python -m arib survey` "
        f"(generated)")


def survey_record(mutant: MutantSpec, folder: Path) -> dict | None:
    """The mutant's outcome in the lane file of a written survey, or None when not there."""
    path = folder / f"{mutant.target}.json"
    if not path.is_file():
        return None
    for outcome in json.loads(path.read_text()).get("outcomes", []):
        if outcome.get("id") == mutant.id:
            return dict(outcome, _path=str(path))
    return None


def describe(mutant: MutantSpec, survey_dir: Path) -> str:
    """What ``show`` prints: the mutant, its diff, its survey status and the checks that
    killed it, or why there is no status."""
    from arib.checks.registry import load_checks

    paired = [c.id for c in load_checks() if mutant.name in c.mutants or mutant.id in c.mutants]
    lines = [f"{mutant.id} ({mutant.kind.value})",
             f"  lane:     {mutant.target}",
             f"  where:    {mutant.module}.{mutant.qualname}",
             f"  operator: {mutant.operator}",
             f"  defect:   {mutant.description}"]
    if paired:
        lines.append(f"  paired with: {', '.join(paired)}")
    record = survey_record(mutant, survey_dir)
    if mutant.kind is MutantKind.HANDWRITTEN:
        lines.append("  status:   judged by admission with its paired checks (`python -m "
                     "harness admit CHECK`); the survey judges generated mutants only")
    elif record is None:
        lines.append(f"  status:   not surveyed (no entry in {survey_dir}/{mutant.target}.json; "
                     f"run `python -m arib survey --lanes {mutant.target} --write`)")
    else:
        killers = sorted(c for c, s in record.get("checks", {}).items() if s == "killed")
        lines.append(f"  status:   {record['status']} in {record['_path']}")
        lines.append(f"  killed by: {', '.join(killers) or 'no check'}")
    lines += ["", mutant.diff().rstrip()]
    return "\n".join(lines)


def default_survey_dir() -> Path:
    """Where ``survey --write`` puts this version's survey by default."""
    return Path("results/survey") / active_family().stem(sdk_version())


def is_finding_id(key: str) -> bool:
    """Whether ``key`` names a finding (a cell, ``CHECK on LANE``) rather than a mutant."""
    from arib.ground.keys import Cell

    return Cell.FORM.split(" ")[1] in key.split(" ")


def find_finding(key: str, result: Path | None, results_dir: Path = Path("results")
                 ) -> tuple[Path, dict]:
    """The finding ``key`` (``CHECK on LANE``) in ``result``, else in the newest run of the
    installed version under ``results_dir``, with the file it was read from."""
    from arib.ground.keys import Cell
    from arib.runs.baseline import latest_run
    from arib.runs.results import read_results

    cell = Cell.parse(key)
    path = result if result is not None else latest_run(results_dir, sdk_version())
    document = read_results(path)
    for finding in document.get("findings", []):
        if Cell.of(finding) == cell:
            return path, finding
    cells = sorted({str(Cell.of(f)) for f in document.get("findings", [])})
    raise UnknownNameError(
        f"no finding {key!r} in {str(path)!r}: the rule: a finding id is a measured cell, "
        f"{Cell.FORM!r} (e.g. {cells[0] if cells else Cell.EXAMPLE!r}); fix the id, or name "
        f"another run with --result FILE")


def describe_finding(path: Path, finding: dict) -> str:
    """What ``show CHECK on LANE`` prints: the verdict, its counts, samples and replay."""
    from arib.ground.model import Finding

    f = Finding.from_json(finding)
    counts = ", ".join(f"{k} {v}" for k, v in f.counts.labelled().items() if v) or "none"
    lines = [f"{f.invariant_id} on {f.target}: {f.verdict.value} ({path})",
             f"  invariant: {f.invariant}",
             f"  fault:     {f.fault}",
             f"  versions:  sdk {f.sdk_version}, python {f.python_version}",
             f"  trials:    {f.violating_trials} of {f.trials} violated; counts: {counts}"]
    if f.reason:
        lines.append(f"  reason:    {f.reason}")
    if f.violation_modes:
        lines.append("  modes:     " + ", ".join(f"{k} x{v}" for k, v in f.violation_modes.items()))
    lines += [f"  sample:    {sample}" for sample in f.samples]
    if f.replay:
        lines.append(f"  replay:    {f.replay}")
    if f.traceback:
        lines += ["", f.traceback.rstrip()]
    return "\n".join(lines)
