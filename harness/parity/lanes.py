"""Parity lanes: a family's lane target run under one event loop.

The targets are the family's own (its ``WorkflowKind.targets``: the bench's lanes, under the
names the gate's history keeps); a lane is one of them under one of the run's loops, named
``<target>@<loop>``. A service lane joins only when the run was given its server; this module
never starts a service.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from arib.checks.parity.kind import WorkflowKind
from arib.ground.errors import UnknownNameError, UsageError
from arib.ground.model import Loop
from arib.ground.services import NotMeasured
from arib.targets.base import TargetSpec


@dataclass(frozen=True)
class LaneSpec:
    """One lane: a target under one event loop."""

    target: TargetSpec
    loop: Loop

    @property
    def name(self) -> str:
        """The lane's name: ``<target>@<loop>``."""
        return f"{self.target.name}@{self.loop.value}"

    def to_json(self) -> dict[str, Any]:
        """The JSON form of this lane: name, target and loop."""
        return {"name": self.name, "target": self.target.to_json(), "loop": self.loop.value}


Selection = tuple[tuple[LaneSpec, ...], tuple[NotMeasured, ...]]


def parse_loops(text: str | None) -> tuple[Loop, ...]:
    """Loops from a comma-separated list; None or empty means both."""
    if not text:
        return (Loop.ASYNCIO, Loop.UVLOOP)
    loops: list[Loop] = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        loop = Loop.parse(part)
        if loop not in loops:
            loops.append(loop)
    if not loops:
        raise UsageError(f"no event loop in {text!r}: use asyncio, uvloop or both")
    return tuple(loops)


def _names(names: str | Sequence[str] | None) -> list[str]:
    if isinstance(names, str):
        return [p.strip() for p in names.split(",") if p.strip()]
    return [n.strip() for n in names or () if n.strip()]


def named_targets(names: str | Sequence[str] | None) -> set[str] | None:
    """The target names a ``--lanes`` selection names (None: every lane)."""
    return {name.partition("@")[0] for name in _names(names)} or None


def select_lanes(
    kind: WorkflowKind,
    names: str | Sequence[str] | None,
    loops: Sequence[Loop],
    extra_targets: Iterable[TargetSpec] = (),
    services: Mapping[str, str] | None = None,
) -> Selection:
    """The lanes to run, reference lane first; ``names`` are target names or ``target@loop``.

    The targets are the kind's, then ``extra_targets`` (a target given there replaces the
    kind's of that name). The reference lane is always included: every other lane is compared
    with it. A lane that needs a service ``services`` lacks is listed as not measured, with
    the reason; an unknown name raises ``UnknownNameError`` listing the known ones.
    """
    own, own_missing = kind.targets()
    extra_targets = tuple(extra_targets)
    services = services or {}
    missing = list(own_missing)
    known: dict[str, TargetSpec] = {}
    for target in (*own, *extra_targets):
        if target.service and target.service not in services:
            missing = [m for m in missing if m.name != target.name]
            known.pop(target.name, None)
            missing.append(NotMeasured(target.name, (
                f"needs service {target.service!r}, which this run was not given "
                f"(services: {sorted(services)})")))
        else:
            missing = [m for m in missing if m.name != target.name]
            known[target.name] = target
    if kind.reference_target not in known:
        raise UsageError(
            f"the {kind.family} parity kind's reference target {kind.reference_target!r} is "
            f"not among its targets ({', '.join(known)}); fix the kind's targets"
        )
    wanted: list[LaneSpec] = []
    requested = _names(names)
    if not requested:
        wanted = [LaneSpec(t, loop) for t in known.values() for loop in loops]
    for name in requested:
        target_name, _, loop_name = name.partition("@")
        lane_loops = parse_loops(loop_name) if loop_name else tuple(loops)
        if target_name not in known:
            if any(m.name == target_name for m in missing):
                continue  # listed in not_measured with its reason
            names_ = [*known, *(m.name for m in missing)]
            raise UnknownNameError(
                f"unknown {kind.family} parity lane {name!r}: use one of {', '.join(names_)} "
                f"(optionally with @asyncio or @uvloop)"
            )
        wanted.extend(LaneSpec(known[target_name], loop) for loop in lane_loops)
    if requested:  # a lane of the kind's the selection does not name was not asked for
        asked = (named_targets(requested) or set()) | {t.name for t in extra_targets}
        missing = [m for m in missing if m.name in asked]
    lanes: list[LaneSpec] = [LaneSpec(known[kind.reference_target], Loop.ASYNCIO)]
    for lane in wanted:
        if lane.name not in {x.name for x in lanes}:
            lanes.append(lane)
    return tuple(lanes), tuple(missing)
