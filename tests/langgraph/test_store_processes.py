"""ARIB-LGSTORE-013: several processes setting up one fresh store at once. It holds on our
reference store, kills its mutants, abstains on a store private to its instance, and finds
the migration race of the SQLite stores (langgraph-checkpoint-sqlite 3.1.2: a version row
inserted twice)."""

from __future__ import annotations

from arib.ground.model import Verdict
from arib.targets.langgraph.lanes import STORE_ASYNC_SQLITE_FILE, STORE_MEMORY, STORE_REFERENCE
from tests.checkrun import run_small

PARAMS = {"trials": 4, "processes": 4, "steps": 2}


def test_holds_on_the_reference_store_and_kills_a_check_then_create_schema() -> None:
    held = run_small("ARIB-LGSTORE-013", PARAMS, lane=STORE_REFERENCE)
    assert held.verdict is Verdict.HELD, held.samples
    killed = run_small("ARIB-LGSTORE-013", PARAMS, "lg_store_reference_tables_checked_then_made",
                       STORE_REFERENCE)
    assert killed.verdict is Verdict.VIOLATED and killed.violating_trials == 4
    assert "table ref_items already exists" in killed.samples[0], killed.samples


def test_abstains_on_the_memory_store() -> None:
    finding = run_small("ARIB-LGSTORE-013", PARAMS, lane=STORE_MEMORY)
    assert finding.verdict is Verdict.NOT_APPLICABLE
    assert "a second process cannot open it" in (finding.reason or "")


def test_the_async_sqlite_store_records_a_migration_twice() -> None:
    """A real finding, in most trials (a race): two processes read the same migration version
    and both insert it."""
    finding = run_small("ARIB-LGSTORE-013", {**PARAMS, "trials": 8}, lane=STORE_ASYNC_SQLITE_FILE)
    assert finding.verdict is Verdict.VIOLATED, finding.samples
    assert any("UNIQUE constraint failed: store_migrations.v" in s for s in finding.samples)
