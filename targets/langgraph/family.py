"""The LangGraph family's record (entry point ``langgraph`` of ``arib.families``)."""

from __future__ import annotations

from arib.ground.family import Family
from arib.ground.package import data_path

LANGGRAPH = Family(
    name="langgraph",
    distribution="langgraph-checkpoint",
    description="LangGraph checkpointers and stores (InMemorySaver, SqliteSaver, "
                "AsyncSqliteSaver, PostgresSaver, AsyncPostgresSaver, stores)",
    checks="arib.checks.langgraph",
    mutants="arib.mutants.langgraph",
    lanes="arib.targets.langgraph.lanes:LANES",
    survey_lanes="arib.targets.langgraph.lanes:SURVEY_LANES",
    reference="arib.targets.langgraph.lanes:REFERENCE",
    forced_broken="lg_reference_forced_broken",
    read_items="arib.targets.langgraph.lanes:read_checkpoints",
    availability="arib.targets.langgraph.services:lane_availability",
    not_measured="arib.targets.langgraph.services:NOT_MEASURED",
    verify="arib.targets.langgraph.lanes:verify_api",
    probe="arib.checks.langgraph._probe:probe",
    lock_dir=data_path("arib", "locks", "langgraph"),
    packages=("langchain-core", "ormsgpack", "aiosqlite", "psycopg", "psycopg-pool", "anyio",
              "libcst", "uvloop", "pytest", "sqlite-vec", "pysqlite3-binary"),
    components=(("cp", "langgraph-checkpoint"), ("sq", "langgraph-checkpoint-sqlite"),
                ("pg", "langgraph-checkpoint-postgres")),
)
