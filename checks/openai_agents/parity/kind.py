"""openai-agents' parity kind: offline agent runs and fault workflows on every session lane.

``AGENT_KIND`` is what the family record names (``parity``). Its lanes are the family's own
(``arib.targets.openai_agents``): the reference, the SDK's local backends with the ``:memory:``
lanes (``SQLiteSession(":memory:")`` and ``SQLAlchemySession`` on an in-memory
``sqlite+aiosqlite://`` engine with a ``StaticPool``), the encrypted lanes where
``cryptography`` is importable, and the server lanes when their server runs; so the gate and the
checks run the same configurations. This module stays light: it never imports the SDK.
"""

from __future__ import annotations

import dataclasses
import importlib.util
from typing import Any

from arib.checks.parity.kind import CasePool, Targets, WorkflowKind
from arib.checks.parity.normalize import NormalizationRule
from arib.checks.parity.records import Workflow, WorkflowResult
from arib.ground.family import plugin_lanes
from arib.ground.services import NotMeasured
from arib.targets.base import TargetSpec
from arib.targets.openai_agents.family import OPENAI_AGENTS
from arib.targets.openai_agents.lanes import ALL_TARGETS
from arib.targets.openai_agents.reference import REFERENCE
from arib.targets.openai_agents.sdk import SQLALCHEMY_SQLITE_MEMORY
from arib.targets.openai_agents.services import ENCRYPTED_SQLALCHEMY_SQLITE, ENCRYPTED_SQLITE

# The parity history keys the in-memory SQLAlchemy lane by the name it had before it became a
# check lane; every other lane keeps the bench's name.
PARITY_NAMES = {SQLALCHEMY_SQLITE_MEMORY.name: "sqlalchemy-memory"}

# The written normalization rules. Empty, by measurement: on openai-agents 0.19.2 and 0.24.0,
# with the scripted model of arib.checks.openai_agents.parity.scripted, every value in every
# stored item is one the workflow chose (item and call ids come from the workflow's counter,
# handoff outputs are fixed JSON). The SDK's own nondeterministic values (uuid4 occurrence keys
# of run items, trace ids) never enter a stored item or a model input: the 15 reference
# workflows and 40 generated cases give byte-identical replay digests across 16 lanes, two
# event loops, repeated runs and both SDK versions. So no workflow has a
# ``replay_hash_normalized`` today; a rule is added here, with its reason, the day a backend or
# SDK version stores such a value (e.g. a server-assigned id or timestamp).
RULES: tuple[NormalizationRule, ...] = ()


def encrypted_available() -> str | None:
    """None when EncryptedSession can run here, else the reason it cannot."""
    if importlib.util.find_spec("cryptography") is None:
        return "cryptography is not importable; install openai-agents[encrypt] to measure it"
    return None


def parity_targets() -> Targets:
    """The family's lanes (its reference first), each under its parity name, those that need
    no server before those that do, then the lanes installed packages add; the encrypted ones
    as not measured when they cannot run here."""
    targets: list[TargetSpec] = []
    missing: list[NotMeasured] = []
    reason = encrypted_available()
    for target in sorted(ALL_TARGETS, key=lambda t: t.service is not None):
        if target in (ENCRYPTED_SQLITE, ENCRYPTED_SQLALCHEMY_SQLITE) and reason is not None:
            missing.append(NotMeasured(target.name, reason))
            continue
        name = PARITY_NAMES.get(target.name, target.name)
        targets.append(dataclasses.replace(target, name=name) if name != target.name else target)
    # the lanes installed packages add (a third-party session is replayed like the SDK's own)
    targets.extend(plugin_lanes(OPENAI_AGENTS.name, frozenset(t.name for t in targets)).loaded)
    return tuple(targets), tuple(missing)


async def play_agent_workflow(workflow: Workflow, session: Any, **kwargs: Any) -> WorkflowResult:
    """Play one agent workflow on a lane's session (the SDK is imported on first use)."""
    from arib.checks.openai_agents.parity.workflows import run_workflow

    return await run_workflow(workflow, session, **kwargs)


def preload() -> None:
    """Import once in the parent what every lane's child needs beyond its lane's own backend
    and drivers (the gate imports those for every lane first: ``arib.warm``): the asyncio
    backend ``anyio.run`` imports lazily, and uvloop where it is installed.

    ``set_tracing_disabled`` builds the SDK's trace provider (and its HTTP client) on first
    use; doing it here once saves every child that work. It starts no thread: the exporter's
    worker starts on the first span, and with tracing disabled there is none.
    """
    import agents
    import anyio._backends._asyncio  # noqa: F401 - anyio.run imports it lazily

    try:
        import uvloop  # noqa: F401
    except ImportError:
        pass
    agents.set_tracing_disabled(True)


def rules_table() -> list[dict[str, str]]:
    """The written rules as JSON, for the report."""
    return [r.to_json() for r in RULES]


def gate_workflows() -> tuple[Workflow, ...]:
    """The reference workflows, then the fault workflows."""
    from arib.checks.openai_agents.parity.fault_workflows import GATE_WORKFLOWS

    return GATE_WORKFLOWS


def case_pool() -> tuple[Workflow, ...]:
    """The reference workflows generated cases are composed from."""
    from arib.checks.openai_agents.parity.workflows import REFERENCE_WORKFLOWS

    return REFERENCE_WORKFLOWS


def limit_reads() -> Any:
    """The step a generated case may end with: reads at limits 1, 2 and 4."""
    from arib.checks.openai_agents.parity.steps import LimitReads

    return LimitReads((1, 2, 4))


AGENT_KIND = WorkflowKind(
    family="openai-agents",
    reference_target=REFERENCE.name,
    targets=parity_targets,
    play=play_agent_workflow,
    preload=preload,
    rules=rules_table,
    default_workflows=gate_workflows,
    cases=CasePool(workflows=case_pool, closing_step=limit_reads),
)
