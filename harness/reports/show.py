"""``python -m arib show MUTANT_ID``: one mutant's diff, lane, operator, status and killers.

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
