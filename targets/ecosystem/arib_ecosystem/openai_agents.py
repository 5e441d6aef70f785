"""openai-agents session backends published by others, as lanes (none yet in this module)."""

from __future__ import annotations

from arib.targets.base import TargetSpec

LANES: tuple[TargetSpec, ...] = ()
