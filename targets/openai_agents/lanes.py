"""openai-agents' lanes: the SDK's local backends, those on a server, and our reference."""

from __future__ import annotations

from arib.targets.base import TargetSpec
from arib.targets.openai_agents.reference import REFERENCE
from arib.targets.openai_agents.sdk import LOCAL_TARGETS
from arib.targets.openai_agents.services import SERVICE_TARGETS

REAL_TARGETS: tuple[TargetSpec, ...] = (*LOCAL_TARGETS, *SERVICE_TARGETS)
ALL_TARGETS: tuple[TargetSpec, ...] = (REFERENCE, *REAL_TARGETS)
