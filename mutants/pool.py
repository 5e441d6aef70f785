"""Generated mutants per lane, generated once per module and process, and selected for a
check."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Sequence
from typing import Protocol, TypeVar

from arib.ground.errors import MutantDefinitionError
from arib.ground.keys import MutantKey
from arib.ground.selector import Selector
from arib.ground.sources import installed_source
from arib.mutants.base import MutantSpec
from arib.mutants.hangs import hang_prone_first
from arib.mutants.hook import prepare
from arib.mutants.report import GenerationReport, select
from arib.targets.base import TargetSpec
from arib.targets.registry import get_target

J = TypeVar("J")


class Store(Protocol):
    """Where generated reports are kept across runs (``arib.caches.generation``)."""

    def load(self, module: str, backend: str, source: str) -> GenerationReport | None:
        """The kept report of class ``backend`` in ``module`` (text ``source``), or None."""

    def keep(self, module: str, backend: str, source: str, report: GenerationReport) -> bool:
        """Keep ``report`` for the next runs; whether it was kept."""


_STORE: Store | None = None  # the store this process uses


def use_store(store: Store | None) -> Store | None:
    """Load and keep generated reports in ``store`` from now on (None: generate each time);
    the store used until now."""
    global _STORE
    previous, _STORE = _STORE, store
    return previous


def reset() -> None:
    """Forget every report generated in this process, and the store (for tests)."""
    generated_for_lane.cache_clear()
    _BY_MODULE.clear()
    use_store(None)


# Per (module, backend class): the report generated for the first lane asking for it. Lanes
# built on one module (SQLite in a file and in memory; SQLAlchemy on three databases) get the
# same mutants: generation reads only the installed module, never the lane.
_BY_MODULE: dict[tuple[str, str], GenerationReport] = {}


@functools.cache
def generated_for_lane(lane: str) -> GenerationReport:
    """Every generated mutant of a lane's backend module (generated once per module and
    process; each lane's report and mutants carry its own name)."""
    return generated_for_target(get_target(lane))


def generated_for_target(target: TargetSpec) -> GenerationReport:
    """Every generated mutant of class ``target.backend`` in ``target.module``, on the lane
    ``target`` names (a lane the registry need not know: a user's, see arib.survey.user)."""
    first = _BY_MODULE.get((target.module, target.backend))
    if first is None:
        first = _BY_MODULE[target.module, target.backend] = _generate(target)
    return retarget(first, target.name)


def _generate(target: TargetSpec) -> GenerationReport:
    """Generated from the installed source, or loaded from the store where it is kept."""
    _, source = installed_source(target.module)
    store = _STORE
    kept = store.load(target.module, target.backend, source) if store is not None else None
    if kept is not None:
        return kept
    from arib.mutants.generate import generate_from_source  # libcst: only when generating

    report = generate_from_source(source, target.module, target.name, target.backend)
    if store is not None:
        store.keep(target.module, target.backend, source, report)
    return report


def retarget(report: GenerationReport, lane: str) -> GenerationReport:
    """``report`` as generated for ``lane``: the same mutants, each on that lane."""
    if report.target == lane:
        return report
    return dataclasses.replace(report, target=lane, mutants=tuple(
        dataclasses.replace(m, target=lane) for m in report.mutants))


# The SDK version the checks' selectors are written against: the pinned one (noxfile
# PINNED_SDK). There a selector that matches nothing is a definition error; on another
# version the code it names may not exist (it was added or rewritten since), so it pairs
# nothing there, and admission still asks for a generated mutant that is killed.
SELECTORS_SDK = "0.24.0"


def generated_for_selectors(selectors: Sequence[Selector], sdk: str
                            ) -> tuple[tuple[MutantSpec, ...], tuple[str, ...]]:
    """The generated mutants a check's ``selectors`` name, and one problem line per bad
    selector (only on ``sdk`` == SELECTORS_SDK, the version the selectors are written against;
    the caller passes the installed SDK version)."""
    strict = sdk == SELECTORS_SDK
    # By lane and id: lanes built on one module (SQLAlchemy on SQLite and on PostgreSQL) share
    # the module's mutant ids, and each lane's mutant is a pair of its own.
    chosen: dict[MutantKey, MutantSpec] = {}
    problems: list[str] = []
    for selector in selectors:
        try:
            pool = generated_for_lane(selector.target).mutants
            for mutant in select(pool, selector):
                chosen.setdefault(mutant.key, mutant)
        except MutantDefinitionError as exc:
            if strict:
                problems.append(str(exc))
        except Exception as exc:  # noqa: BLE001 - an unknown lane or unreadable module
            problems.append(f"selector {selector!r} could not be resolved: {exc}")
    return tuple(chosen.values()), tuple(problems)


def find_generated(mutant_id: str, lanes: tuple[str, ...]) -> MutantSpec | None:
    """A generated mutant by id among the lanes' pools."""
    for lane in lanes:
        for mutant in generated_for_lane(lane).mutants:
            if mutant.id == mutant_id:
                return mutant
    return None


def schedule(jobs: Sequence[J], mutant_of: Callable[[J], MutantSpec | None]) -> list[J]:
    """The order to run mutant ``jobs`` in, with what every child needs worked out here.

    Call it in the parent just before forking: jobs whose operator may hang go first (see
    ``hang_prone_first``), and each mutated module's dependents are scanned once, here,
    instead of in every child.
    """
    for module in sorted({m.module for m in map(mutant_of, jobs) if m and m.source}):
        prepare(module)
    return hang_prone_first(jobs, lambda job: getattr(mutant_of(job), "operator", None))
