"""A lane's survey plan: what is known of its mutants before any of them runs.

``prepare_lanes`` gives a lane's plans (of a user's lane: one for the class its factory returns
and one per class it names to mutate, ``arib.survey.user``); ``prepare`` generates the mutants
of a lane's module, maps their lines, and sets aside those the compiler finds
equivalent or duplicate (``arib.mutants.equivalence``) and those whose lines a fixed guard
rules out on the lane (``arib.survey.guards``); ``not_applicable`` those that can fire only
after a terminal close the lane's verified claims say it has not; ``shard_plans`` cuts the
plans to one shard's units. The engine (``arib.survey.engine``) fills in each plan's clean
bases, coverage and counts as it runs.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import importlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from arib.caches.clean import Reuse
from arib.caches.equivalence import classified
from arib.caches.inputs import Executed, merge_executed, named_inputs
from arib.ground.family import active_family
from arib.ground.keys import MutantKey
from arib.ground.model import CleanBase, MutantStatus
from arib.mutants.base import MutantSpec
from arib.mutants.equivalence import Equivalence
from arib.mutants.operators import OPERATORS
from arib.mutants.pool import generated_for_target
from arib.mutants.report import GenerationReport
from arib.runs.shard import Split
from arib.survey.coverage import ModuleLines
from arib.survey.guards import Excluded, excluded_lines
from arib.survey.user import UserLaneError, store_lanes
from arib.targets.base import TargetSpec

S = MutantStatus


@dataclass
class Plan:
    """One lane being surveyed: its mutants, their lines and what is known before any run."""

    lane: TargetSpec
    report: GenerationReport | None = None
    file: str = ""
    lines: ModuleLines | None = None
    ignored: dict[str, tuple[MutantStatus, str]] = field(default_factory=dict)
    error: str | None = None
    bad_input: bool = False  # the error is the lane's own (arib.survey.user)
    clean: dict[str, CleanBase] = field(default_factory=dict)
    coverage: dict[str, frozenset[int]] = field(default_factory=dict)
    mutant_lines: dict[str, frozenset[int] | None] = field(default_factory=dict)
    duplicates: dict[str, Equivalence] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    excluded: Excluded = field(default_factory=lambda: Excluded({}))
    order: tuple[str, ...] = ()  # every generated mutant's id, in order (set when sharded)
    # per check: what each clean rerun executed in installed distributions (None: unknown)
    executed: dict[str, list[Executed | None]] = field(default_factory=dict)
    # per check: its named inputs once known, kept from a reused clean base
    # (arib.caches.clean) or named once from this survey's clean reruns
    named: dict[str, Mapping[str, Any]] = field(default_factory=dict)
    module_digest: str = ""  # of the lane module's source
    reuse: dict[Reuse, int] = field(default_factory=lambda: dict.fromkeys(Reuse, 0))

    def inputs(self, check_id: str) -> Mapping[str, Any] | None:
        """The named inputs of ``check_id`` on this lane (``arib.caches.inputs``), or None."""
        if check_id in self.named:
            return self.named[check_id]
        runs = self.executed.get(check_id)
        return named_inputs(merge_executed(runs), active_family().distributions) if runs \
            else None

    @property
    def mutants(self) -> tuple[MutantSpec, ...]:
        return self.report.mutants if self.report is not None else ()

    def key(self, mutant: MutantSpec) -> MutantKey:
        """``mutant`` on this plan's lane (lanes built on one module share its id)."""
        return MutantKey(self.lane.name, mutant.id)

    def fail(self, reason: str) -> None:
        if self.error is None:
            self.error = reason

    def reaches(self, check_id: str, mutant: MutantSpec) -> bool:
        """Whether a clean run of ``check_id`` executed a line ``mutant`` changes (True when
        its lines are unknown: it is judged by every check)."""
        lines = self.mutant_lines.get(mutant.id)
        return lines is None or bool(lines & self.coverage.get(check_id, frozenset()))


@functools.lru_cache(maxsize=16)
def _module_lines(source: str, filename: str) -> ModuleLines:
    """The lines of one module, shared by the lanes built on it (mapped once per process)."""
    return ModuleLines(source, filename)


def prepare_lanes(given: TargetSpec, services: Mapping[str, str], tmpdir: str | None
                  ) -> list[Plan]:
    """The plans of a lane: its store class's, then one per class it names to mutate (a
    child only to find the class a user's factory returns, arib.survey.user)."""
    try:
        lanes = store_lanes(given, services, tmpdir)
    except UserLaneError as exc:  # one line naming the lane and the rule; the others go on
        plan = Plan(given)
        plan.fail(str(exc))
        plan.bad_input = True
        return [plan]
    return [prepare(lane) for lane in lanes]


def prepare(lane: TargetSpec) -> Plan:
    """Generate a lane's mutants and compare their compiled units."""
    plan = Plan(lane)
    try:
        plan.report = generated_for_target(lane)
        module = importlib.import_module(lane.module)  # imported before any child forks
        plan.file = str(module.__file__)
        with open(plan.file, encoding="utf-8") as handle:
            source = handle.read()
        plan.lines = _module_lines(source, plan.file)
        plan.module_digest = hashlib.sha256(source.encode()).hexdigest()
        plan.excluded = excluded_lines(source, lane.fixed_guards)
    except Exception as exc:  # noqa: BLE001 - one lane's failure never stops the others
        plan.fail(f"its mutants could not be generated or mapped: {exc!r}")
        return plan
    for found in classified(source, plan.mutants, plan.file).values():
        plan.ignored[found.mutant_id] = (found.status, found.reason)
        if found.status is S.DUPLICATE:
            plan.duplicates[found.mutant_id] = found
    for mutant in plan.mutants:
        lines = plan.mutant_lines[mutant.id] = plan.lines.mutant_lines(mutant)
        guard = plan.excluded.guard_of(sorted(lines or ()))
        if guard is not None and mutant.id not in plan.ignored:
            plan.ignored[mutant.id] = (S.NOT_APPLICABLE, (
                f"its lines run only when {guard.expr} is {not guard.value}, and on this lane "
                f"it is {guard.value} ({guard.why}); verified on the runtime object"))
    return plan


def never_fires(lane: TargetSpec) -> bool:
    """By its claims, close() is absent or does not end the session on ``lane``."""
    return not (lane.claims.has_close and lane.claims.close_is_terminal)


def not_applicable(plan: Plan, verified: str | None) -> None:
    """Mark the mutants that can only fire after a terminal close, once the claims hold."""
    lane = plan.lane
    how = ("the session has no close()" if not lane.claims.has_close
           else f"close() does not end the session ({lane.claims.close_note})")
    for mutant in plan.mutants:
        op = OPERATORS.get(mutant.operator)
        if op is None or not op.requires_terminal_close or mutant.id in plan.ignored:
            continue
        if verified is None:
            plan.ignored[mutant.id] = (S.NOT_APPLICABLE, (
                f"{mutant.operator} changes only what a closed session does, and on this lane "
                f"{how}; verified on the runtime object"))


def _units(plan: Plan) -> dict[MutantKey | str, list[MutantSpec]]:
    """A lane's shard units: its mutants grouped with their duplicates (keyed by the first's
    key), or the lane alone when it has no mutant to judge (so that exactly one shard
    reports it)."""
    if plan.error is not None or not plan.mutants:
        return {plan.lane.name: []}
    groups: dict[MutantKey | str, list[MutantSpec]] = {}
    for mutant in plan.mutants:
        dup = plan.duplicates.get(mutant.id)
        groups.setdefault(MutantKey(plan.lane.name, dup.of if dup and dup.of else mutant.id),
                          []).append(mutant)
    return groups


def shard_plans(plans: Sequence[Plan], split: Split) -> list[Plan]:
    """The plans cut to this shard's units; a lane with none of them is left out."""
    units = {plan.lane.name: _units(plan) for plan in plans}
    seconds = {u: (sum(split.durations.get(p.key(m), 0.0) for m in members)
                   if all(p.key(m) in split.durations for m in members) and members else None)
               for p in plans for u, members in units[p.lane.name].items()}
    mine = split.keep(seconds)
    kept = []
    for plan in plans:
        chosen = {m.id for u, members in units[plan.lane.name].items() if u in mine
                  for m in members}
        if not chosen and not (set(units[plan.lane.name]) & mine):
            continue
        plan.order = tuple(m.id for m in plan.mutants)
        if plan.report is not None:
            plan.report = dataclasses.replace(plan.report, mutants=tuple(
                m for m in plan.mutants if m.id in chosen))
        kept.append(plan)
    return kept
