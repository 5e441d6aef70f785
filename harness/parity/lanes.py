"""Parity lanes: a backend target run under one event loop.

The local targets come from ``arib.targets.openai_agents.sdk``,
``arib.targets.openai_agents.services`` and ``arib.targets.openai_agents.reference``, the
``:memory:`` lanes included (``SQLiteSession(":memory:")`` and ``SQLAlchemySession`` on an in-memory
``sqlite+aiosqlite://`` engine with a ``StaticPool``), so the gate and the checks run the same
configurations. Service lanes (Redis, PostgreSQL, ...) join when their ``TargetSpec`` is passed in;
this module never starts a service.
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from arib.ground.errors import UnknownNameError, UsageError
from arib.ground.model import Loop
from arib.ground.services import NotMeasured
from arib.targets.base import TargetSpec
from arib.targets.openai_agents.reference import REFERENCE
from arib.targets.openai_agents.sdk import (
    ADVANCED_SQLITE_FILE,
    ASYNC_SQLITE_FILE,
    SQLALCHEMY_SQLITE_FILE,
    SQLALCHEMY_SQLITE_MEMORY,
    SQLITE_FILE,
    SQLITE_MEMORY,
)
from arib.targets.openai_agents.services import ENCRYPTED_SQLALCHEMY_SQLITE, ENCRYPTED_SQLITE

# The in-memory lanes are the bench's own (arib.targets.openai_agents.sdk); the parity history keys
# the SQLAlchemy one by the name it had before it became a check lane.
SQLALCHEMY_MEMORY = dataclasses.replace(SQLALCHEMY_SQLITE_MEMORY, name="sqlalchemy-memory")


def encrypted_available() -> str | None:
    """None when EncryptedSession can run here, else the reason it cannot."""
    if importlib.util.find_spec("cryptography") is None:
        return "cryptography is not importable; install openai-agents[encrypt] to measure it"
    return None


def local_targets() -> tuple[tuple[TargetSpec, ...], tuple[NotMeasured, ...]]:
    """Every local parity target (reference first) and the ones that cannot run here."""
    targets: list[TargetSpec] = [
        REFERENCE,
        SQLITE_FILE,
        ASYNC_SQLITE_FILE,
        ADVANCED_SQLITE_FILE,
        SQLALCHEMY_SQLITE_FILE,
        SQLITE_MEMORY,
        SQLALCHEMY_MEMORY,
    ]
    missing: list[NotMeasured] = []
    reason = encrypted_available()
    for spec in (ENCRYPTED_SQLITE, ENCRYPTED_SQLALCHEMY_SQLITE):
        if reason is None:
            targets.append(spec)
        else:
            missing.append(NotMeasured(spec.name, reason))
    return tuple(targets), tuple(missing)


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


REFERENCE_LANE = LaneSpec(REFERENCE, Loop.ASYNCIO)


def parse_loops(text: str | None) -> tuple[Loop, ...]:
    """Loops from a comma-separated list; None or empty means both."""
    if not text:
        return (Loop.ASYNCIO, Loop.UVLOOP)
    loops: list[Loop] = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        try:
            loop = Loop(part)
        except ValueError:
            known = ", ".join(m.value for m in Loop)
            raise UsageError(f"unknown event loop {part!r}: use one of {known}") from None
        if loop is Loop.UVLOOP and importlib.util.find_spec("uvloop") is None:
            raise UsageError("event loop 'uvloop' asked for but uvloop is not installed")
        if loop not in loops:
            loops.append(loop)
    if not loops:
        raise UsageError(f"no event loop in {text!r}: use asyncio, uvloop or both")
    return tuple(loops)


def named_targets(names: str | Sequence[str] | None) -> set[str] | None:
    """The target names a ``--lanes`` selection names (None: every lane)."""
    if isinstance(names, str):
        names = [p.strip() for p in names.split(",") if p.strip()]
    if not names:
        return None
    return {name.partition("@")[0] for name in names}


def select_lanes(
    names: str | Sequence[str] | None,
    loops: Sequence[Loop],
    extra_targets: Iterable[TargetSpec] = (),
    services: Mapping[str, str] | None = None,
) -> tuple[tuple[LaneSpec, ...], tuple[NotMeasured, ...]]:
    """The lanes to run, reference lane first; ``names`` are target names or ``target@loop``.

    The reference lane ``reference@asyncio`` is always included: every other lane is compared
    with it. A service lane (an extra target whose ``service`` is set) joins only when
    ``services`` has that service; else it is listed as not measured, with the reason. An
    unknown name raises ``UnknownNameError`` listing the known ones.
    """
    local, local_missing = local_targets()
    missing = list(local_missing)
    known: dict[str, TargetSpec] = {t.name: t for t in local}
    for target in extra_targets:
        if target.service and target.service not in (services or {}):
            missing.append(
                NotMeasured(
                    target.name,
                    f"needs service {target.service!r}, which this run was not given "
                    f"(services: {sorted(services or {})})",
                )
            )
        else:
            known[target.name] = target
    if isinstance(names, str):
        names = [p.strip() for p in names.split(",") if p.strip()]
    wanted: list[LaneSpec] = []
    if not names:
        wanted = [LaneSpec(t, loop) for t in known.values() for loop in loops]
    else:
        for name in names:
            target_name, _, loop_name = name.partition("@")
            lane_loops = parse_loops(loop_name) if loop_name else tuple(loops)
            if target_name not in known:
                gone = [m for m in missing if m.name == target_name]
                if gone:
                    continue  # listed in not_measured with its reason
                names_ = [*known, *(m.name for m in missing if m.name not in known)]
                raise UnknownNameError(
                    f"unknown parity lane {name!r}: use one of {', '.join(names_)} "
                    f"(optionally with @asyncio or @uvloop)"
                )
            wanted.extend(LaneSpec(known[target_name], loop) for loop in lane_loops)
    lanes: list[LaneSpec] = [REFERENCE_LANE]
    for lane in wanted:
        if lane not in lanes:
            lanes.append(lane)
    return tuple(lanes), tuple(missing)
