"""The openai-agents family: session backends, measured per openai-agents version.

Registered as the entry point ``openai-agents`` of the group ``arib.families`` (pyproject.toml)
and built in (harness.ground.family.BUILTIN), so that a checkout runs without installing.
"""

from __future__ import annotations

from pathlib import Path

from harness.ground.family import Family

_ROOT = Path(__file__).resolve().parent.parent

OPENAI_AGENTS = Family(
    name="openai-agents",
    distribution="openai-agents",
    description="openai-agents session backends (SQLite, AsyncSQLite, AdvancedSQLite, "
                "SQLAlchemy, Redis, Encrypted)",
    checks="checks",
    mutants="mutants",
    lanes="targets.registry:ALL_TARGETS",
    survey_lanes="targets.sdk:LOCAL_TARGETS",
    reference="targets.reference:REFERENCE",
    forced_broken="reference_forced_broken",
    read_items="checks.common:read_session_items",
    availability="targets.services:lane_availability",
    not_measured="targets.services:NOT_MEASURED",
    lock_dir=_ROOT / "harness" / "locks",
    packages=("openai", "pydantic", "sqlalchemy", "aiosqlite", "anyio", "libcst",
              "jsonschema", "uvloop", "mutmut", "pytest", "redis", "asyncpg", "cryptography"),
)
