"""The LangGraph family's record (entry point ``langgraph`` of ``arib.families``)."""

from __future__ import annotations

from arib.ground.family import Family
from arib.ground.package import data_path

# The pinned combination (langgraph-checkpoint, -sqlite and -postgres) nox's sessions test.
PINNED = "cp4.3.2+sq3.1.2+pg3.2.0"
# Every combination the bench measures with `--versions all`, oldest first: every minor line of
# the three (checkpoint 1.0-4.3, sqlite 1.0-3.1, postgres 1.0-3.2) in a combination pip accepts.
# -sqlite and -postgres 1.0 need checkpoint 1.x, 2.0 needs 2.x. The first is the oldest release
# of each the family supports: checkpoint 1.0.1 (1.0.0 combines with no -postgres release: each
# requires >=1.0.1), -sqlite 1.0.0 and -postgres 1.0.0.
ALL = ("cp1.0.1+sq1.0.0+pg1.0.0", "cp1.0.12+sq1.0.4+pg1.0.9", "cp2.0.10+sq2.0.0+pg2.0.0",
       "cp2.0.26+sq2.0.11+pg2.0.24", "cp2.1.2+sq2.0.6+pg2.0.25", "cp3.0.1+sq3.0.0+pg3.0.0",
       "cp4.0.3+sq3.0.3+pg3.0.5", "cp4.1.1+sq3.1.0+pg3.1.0", "cp4.2.0+sq3.1.1+pg3.1.2",
       PINNED)

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
    pinned=PINNED,
    bench_versions=(ALL[0], PINNED),
    all_versions=ALL,
    nox_session="langgraph",
    tests="tests/langgraph",
    official="arib.checks.langgraph._official:OFFICIAL_SUITE",
    parity="arib.checks.langgraph.parity.kind:GRAPH_KIND",
)
