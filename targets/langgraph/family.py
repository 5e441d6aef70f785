"""The LangGraph family's record (entry point ``langgraph`` of ``arib.families``)."""

from __future__ import annotations

from pathlib import Path

from harness.ground.family import Family

_ROOT = Path(__file__).resolve().parent.parent.parent

LANGGRAPH = Family(
    name="langgraph",
    distribution="langgraph-checkpoint",
    description="LangGraph checkpointers and stores (InMemorySaver, SqliteSaver, "
                "AsyncSqliteSaver, PostgresSaver, AsyncPostgresSaver, stores)",
    checks="checks.langgraph",
    mutants="mutants.langgraph",
    lanes="targets.langgraph.lanes:LANES",
    survey_lanes="targets.langgraph.lanes:SURVEY_LANES",
    reference="targets.langgraph.lanes:REFERENCE",
    forced_broken="lg_reference_forced_broken",
    read_items="targets.langgraph.lanes:read_checkpoints",
    availability="targets.langgraph.services:lane_availability",
    not_measured="targets.langgraph.services:NOT_MEASURED",
    verify="targets.langgraph.lanes:verify_api",
    probe="checks.langgraph._probe:probe",
    lock_dir=_ROOT / "harness" / "locks" / "langgraph",
    packages=("langchain-core", "ormsgpack", "aiosqlite", "psycopg", "psycopg-pool", "anyio",
              "libcst", "uvloop", "pytest", "sqlite-vec", "pysqlite3-binary"),
    components=(("cp", "langgraph-checkpoint"), ("sq", "langgraph-checkpoint-sqlite"),
                ("pg", "langgraph-checkpoint-postgres")),
)
