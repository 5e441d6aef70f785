"""ARIB-TABLES-001: misconfigured table pairs are refused with ValueError and change nothing,
on the reference and AdvancedSQLiteSession; each hand-written mutant of the reference's
table claim is violated in the mode it breaks; lanes without the options abstain."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from arib.ground.model import Verdict
from arib.targets.openai_agents.reference import ReferenceSession
from arib.targets.registry import get_target
from tests.checkrun import assert_holds_with_its_trials, assert_mutant_violates, run_small

SMALL = {"trials": 1}


def test_holds_on_the_reference() -> None:
    assert_holds_with_its_trials("ARIB-TABLES-001", SMALL)


@pytest.mark.parametrize(("mutant", "mode"), [
    ("reference_tables_claim_ignored", "accepted_misconfigured"),
    ("reference_tables_wrong_refusal", "wrong_refusal"),
    ("reference_tables_refusal_takes_claim", "refusal_changed_store"),
    ("reference_tables_refuses_own_pair", "configured_open_refused"),
    ("reference_tables_unclaimed_accepted", "accepted_misconfigured"),
])
def test_reference_mutants_are_violated(mutant: str, mode: str) -> None:
    assert_mutant_violates("ARIB-TABLES-001", SMALL, mutant, mode)


def test_holds_on_advanced_sqlite() -> None:
    finding = run_small("ARIB-TABLES-001", SMALL, lane=get_target("advanced-sqlite-file"))
    assert finding.verdict is Verdict.HELD, finding.samples


def test_a_lane_without_the_options_abstains_naming_them() -> None:
    finding = run_small("ARIB-TABLES-001", SMALL, lane=get_target("sqlite-file"))
    assert finding.verdict is Verdict.NOT_APPLICABLE
    assert "create_tables" in (finding.reason or "")


def test_the_reference_claims_a_store_for_one_pair(tmp_path: Path) -> None:
    db = tmp_path / "r.db"
    ReferenceSession("s", db)  # the default pair, with table creation, claims the store
    with pytest.raises(ValueError, match="belongs to tables 'agent_sessions'/'agent_messages'"):
        ReferenceSession("s", db, messages_table="other")
    with pytest.raises(ValueError, match="claimed by no table pair"):
        ReferenceSession("s", tmp_path / "new.db", create_tables=False)
    ReferenceSession("s", db, create_tables=False)
    claim = sqlite3.connect(db).execute("SELECT * FROM table_claim").fetchall()
    assert claim == [(1, "agent_sessions", "agent_messages")]
