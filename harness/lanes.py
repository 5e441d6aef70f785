"""Prepares lanes for a run: starts the services they need, or says why a lane is not measured."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from arib.checks.base import CheckSpec
from arib.ground.errors import ServiceError
from arib.ground.family import active_family, plugin_lanes
from arib.ground.services import NotMeasured, ServiceManager
from arib.targets.base import TargetSpec


@dataclass(frozen=True)
class PreparedLanes:
    """Lanes that can be measured, the service URLs they use, and the ones that cannot."""

    lanes: tuple[TargetSpec, ...]
    services: dict[str, str] = field(default_factory=dict)
    versions: dict[str, str] = field(default_factory=dict)
    not_measured: tuple[NotMeasured, ...] = ()


def prepare_lanes(lanes: Sequence[TargetSpec], manager: ServiceManager, *,
                  backends: bool = True, probe: bool = True) -> PreparedLanes:
    """Start each needed service once; a lane whose server or driver is missing is listed,
    and so (with ``probe``, where the family has a probe) is a lane whose probe failed: the
    cause is its not-measured reason, and the other lanes go on (``arib.probe``).
    ``backends`` False leaves the test that the lane's backend module exists (which imports
    it, the SDK with it) to the run's own child (``absent_backend``)."""
    family = active_family()
    availability = family.resolve("availability") if family.availability else _service_only
    ready: list[TargetSpec] = []
    missing: list[NotMeasured] = list(family.resolve("not_measured") if family.not_measured
                                      else ())
    own = frozenset(t.name for t in family.resolve("lanes"))
    missing += [NotMeasured(name, why) for name, why in plugin_lanes(family.name, own).failed]
    for lane in lanes:
        absent = availability(lane, manager) or (absent_backend(lane) if backends else None)
        if absent is not None:
            missing.append(absent)
            continue
        if lane.service is not None:
            try:
                manager.start(lane.service)
            except ServiceError as exc:
                missing.append(NotMeasured(lane.name, f"not measured: {exc}"))
                continue
        ready.append(lane)
    if probe and family.probe:
        from arib.execute import fast_tmpdir, sdk_version
        from arib.probe import probe_lanes

        probed = probe_lanes(ready, manager.services, tmpdir=fast_tmpdir())
        failed = {name: result for name, result in probed.items() if not result.measurable}
        missing += [NotMeasured(name, result.reason(f"{family.name} {sdk_version()}"))
                    for name, result in failed.items()]
        ready = [lane for lane in ready if lane.name not in failed]
    versions = {name: info.version for name, info in manager.infos.items()}
    return PreparedLanes(tuple(ready), dict(manager.services), versions, tuple(missing))


def _service_only(lane: TargetSpec, manager: ServiceManager) -> NotMeasured | None:
    """A lane cannot run here when its service cannot (a family that states no more)."""
    if lane.service is None:
        return None
    return manager.availability(lane.service)


def begin_services(lanes: Sequence[TargetSpec], manager: ServiceManager) -> bool:
    """Begin starting the services of ``lanes`` that can run here (see
    ``ServiceManager.begin``), so that their slow first part runs while the run does other
    work; ``prepare_lanes`` and ``services_for_checks`` finish them. Whether any of them is
    begun and not yet started."""
    family = active_family()
    availability = family.resolve("availability") if family.availability else _service_only
    names = {lane.service for lane in lanes
             if lane.service is not None and availability(lane, manager) is None}
    return any([manager.begin(name) for name in sorted(names)])


def mutant_lanes(checks: Sequence[CheckSpec]) -> list[TargetSpec]:
    """The lanes of ``checks``' paired mutants, hand-written and generated, by name."""
    from arib.mutants.registry import get_mutant
    from arib.targets.registry import get_target

    names = {get_mutant(m).target for c in checks for m in c.mutants}
    names |= {s.target for c in checks for s in c.generated}
    return [get_target(n) for n in sorted(names)]


def services_for_checks(checks: Sequence[CheckSpec], manager: ServiceManager,
                        meanwhile: Callable[[], None] | None = None) -> dict[str, str]:
    """Start the services that the lanes of ``checks``' paired mutants need; their URLs
    (see ``services_for_lanes``)."""
    return services_for_lanes(mutant_lanes(checks), manager, meanwhile)


def services_for_lanes(lanes: Sequence[TargetSpec], manager: ServiceManager,
                       meanwhile: Callable[[], None] | None = None) -> dict[str, str]:
    """Start the services that ``lanes`` (paired mutants' lanes) need; their URLs.
    ``meanwhile`` runs while their slow first parts run, if any is still running (see
    ``begin_services``).

    A service that cannot start is left out: the mutants of its lanes are then reported as not
    judgeable (their clean base cannot be built), never silently dropped.
    """
    served = [lane for lane in lanes if lane.service]
    if begin_services(served, manager) and meanwhile is not None:
        meanwhile()
    return prepare_lanes(served, manager, probe=False).services


def absent_backend(lane: TargetSpec) -> NotMeasured | None:
    """NotMeasured when the lane's own distribution (a third-party lane's package) is not
    installed, or the installed SDK version has no such backend module or class."""
    from arib.execute import sdk_version

    missing = lane.distribution_missing()
    if missing is not None:
        return NotMeasured(lane.name, missing)
    try:
        module = importlib.import_module(lane.module)
    except ImportError as exc:
        return NotMeasured(lane.name, f"absent: {active_family().name} {sdk_version()} has no "
                                      f"module {lane.module} ({exc})")
    if not hasattr(module, lane.backend):
        return NotMeasured(lane.name, f"absent: {active_family().name} {sdk_version()} has no "
                                      f"{lane.backend} in {lane.module}")
    return None


def service_failure(lane: TargetSpec, manager: ServiceManager) -> str | None:
    """Why the lane's service is gone, if it died during the run; None while it is up."""
    if lane.service is None or lane.service not in manager.infos:
        return None
    try:
        manager.check(lane.service)
    except ServiceError as exc:
        return str(exc)
    return None
