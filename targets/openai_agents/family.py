"""The openai-agents family: session backends, measured per openai-agents version.

Registered as the entry point ``openai-agents`` of the group ``arib.families`` (pyproject.toml);
the default family, measured when none is named.
"""

from __future__ import annotations

from arib.ground.family import Family
from arib.ground.package import data_path

OPENAI_AGENTS = Family(
    name="openai-agents",
    distribution="openai-agents",
    description="openai-agents session backends (SQLite, AsyncSQLite, AdvancedSQLite, "
                "SQLAlchemy, Redis, Encrypted)",
    checks="arib.checks.openai_agents",
    mutants="arib.mutants.openai_agents",
    lanes="arib.targets.openai_agents.lanes:ALL_TARGETS",
    survey_lanes="arib.targets.openai_agents.sdk:LOCAL_TARGETS",
    reference="arib.targets.openai_agents.reference:REFERENCE",
    forced_broken="reference_forced_broken",
    read_items="arib.checks.common:read_session_items",
    availability="arib.targets.openai_agents.services:lane_availability",
    not_measured="arib.targets.openai_agents.services:NOT_MEASURED",
    lock_dir=data_path("arib", "locks"),
    packages=("openai", "pydantic", "sqlalchemy", "aiosqlite", "anyio", "libcst",
              "jsonschema", "uvloop", "mutmut", "pytest", "redis", "asyncpg", "cryptography"),
    default=True,
    pinned="0.24.0",
    bench_versions=("0.19.2", "0.24.0"),
    all_versions=("0.19.2", "0.19.4", "0.20.0", "0.22.3", "0.23.1", "0.24.0"),
    nox_session="bench",
    bench_parity=True,
    environment=(("OPENAI_AGENTS_DISABLE_TRACING", "1"),),
    seed="arib.targets.openai_agents.seed",
    parity="arib.checks.openai_agents.parity.kind:AGENT_KIND",
    user_lane="arib.api.lane:lane",
)
