"""arib.api end to end on a user's store that takes encryption_key, max_scan_items and a table
pair (tests/userstore/keyed.py): plain ``validate(factory)`` plans and runs ARIB-KEY-001,
ARIB-BUDGET-001 and ARIB-TABLES-001 with the rest of the defaults, the careful store holds them
all, and each of three copies with one defect is caught by exactly the check of that defect."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from arib.api import DEFAULT_CHECKS, Capability, Report, validate
from arib.api.capability import plan
from arib.api.lane import as_lane
from arib.ground.model import Verdict
from tests.userstore import keyed

OPTION_CHECKS = ("ARIB-KEY-001", "ARIB-BUDGET-001", "ARIB-TABLES-001")


def test_the_options_are_found_on_the_signature_and_their_checks_planned():
    made = plan(as_lane(keyed.sealed_store), None)
    assert set(OPTION_CHECKS) <= {c.id for c in made.run}
    assert not set(OPTION_CHECKS) & set(made.skipped) and not made.errors
    found = {f.capability: f.evidence for f in made.capabilities if f.present}
    assert found[Capability.KEY] == "factory sealed_store takes encryption_key="
    assert found[Capability.BUDGET] == "factory sealed_store takes max_scan_items="
    assert found[Capability.TABLES] == ("factory sealed_store takes create_tables=, "
                                        "sessions_table=, messages_table=")
    assert made.skipped["ARIB-TTL-001"].startswith("needs ttl option")


def test_the_careful_store_holds_every_default_check():
    report = validate(keyed.sealed_store)  # no checks=: the defaults its capabilities call for
    assert report.passed, report
    verdicts = {f.invariant_id: f.verdict for f in report}
    assert set(OPTION_CHECKS) <= set(verdicts)
    assert set(DEFAULT_CHECKS) <= set(verdicts) | set(report.skipped)  # each run or listed
    assert set(verdicts.values()) == {Verdict.HELD}, report
    for check_id in OPTION_CHECKS:
        assert report[check_id].trials >= 2 and report[check_id].violating_trials == 0


# (factory, the check its defect breaks, the mode of its violating trials, words its evidence
# must hold)
DEFECTS = [
    pytest.param(keyed.pops_before_checking_store, "ARIB-KEY-001", "history_destroyed",
                 ("after key B's reads and pops, key A's get_items() returned",),
                 id="wrong-key-pop-deletes-newest"),
    pytest.param(keyed.truncating_budget_store, "ARIB-BUDGET-001", "wrong_window",
                 ("under max_scan_items=4 returned", "expected"),
                 id="budget-truncates-window"),
    pytest.param(keyed.trusting_tables_store, "ARIB-TABLES-001", "wrong_refusal",
                 ("refused with OperationalError: no such table",
                  "not with ValueError", "was served"),
                 id="table-names-trusted"),
]


def assert_caught_by(report: Report, check_id: str, mode: str, words: tuple[str, ...]) -> None:
    """``check_id`` is violated in ``mode`` with ``words`` in its evidence; every other check
    held."""
    assert not report.passed
    finding = report[check_id]
    assert finding.verdict is Verdict.VIOLATED, finding
    assert set(finding.violation_modes) == {mode}, finding.violation_modes
    evidence = " ".join(finding.samples)
    for word in words:
        assert word in evidence, (word, evidence)
    others = {f.invariant_id: f.verdict for f in report if f.invariant_id != check_id}
    assert set(OPTION_CHECKS) - {check_id} <= set(others)
    assert set(others.values()) == {Verdict.HELD}, report


@pytest.mark.parametrize(("factory", "check_id", "mode", "words"), DEFECTS)
def test_each_defect_is_caught_by_its_own_option_check_only(factory, check_id, mode, words):
    assert_caught_by(validate(factory, checks=OPTION_CHECKS), check_id, mode, words)


@pytest.mark.slow
@pytest.mark.parametrize(("factory", "check_id", "mode", "words"), DEFECTS)
def test_of_every_default_check_only_the_defects_own_is_violated(factory, check_id, mode, words):
    assert_caught_by(validate(factory), check_id, mode, words)  # the careful store's defaults


def test_the_wrong_key_defect_loses_the_newest_items():
    finding = validate(keyed.pops_before_checking_store, checks=["ARIB-KEY-001"])["ARIB-KEY-001"]
    assert finding.counts.lost > 0 and finding.counts.foreign == 0, finding  # lost, not shown


# ---------------------------------------------------------------- the store's own refusals


def test_the_careful_store_refuses_a_budget_or_tables_it_cannot_keep(tmp_path: Path):
    for budget in (0, -1, True, 2.5):
        with pytest.raises(ValueError, match="max_scan_items"):
            keyed.SealedStore("s", tmp_path / "a.db", max_scan_items=budget)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="create_tables=False"):
        keyed.SealedStore("s", tmp_path / "new.db", create_tables=False)
    keyed.SealedStore("s", tmp_path / "b.db").close()
    with pytest.raises(ValueError, match="holds the tables 'agent_sessions'/'agent_messages'"):
        keyed.SealedStore("s", tmp_path / "b.db", sessions_table="other", messages_table="m")
    with pytest.raises(ValueError, match="both 'agent_sessions'"):
        keyed.SealedStore("s", tmp_path / "b.db", messages_table="agent_sessions")
    with pytest.raises(ValueError, match="is not a table name"):
        keyed.SealedStore("s", tmp_path / "b.db", messages_table='x"; DROP TABLE y')


def test_another_key_reads_pops_and_clears_none_of_the_items(tmp_path: Path):
    async def scenario() -> None:
        path = tmp_path / "store.db"
        owner = keyed.SealedStore("s", path, encryption_key="a")
        await owner.add_items([{"n": 1}, {"n": 2}])
        other = keyed.SealedStore("s", path, encryption_key="b")
        unkeyed = keyed.SealedStore("s", path)
        for stranger in (other, unkeyed):
            assert await stranger.get_items() == []
            assert await stranger.pop_item() is None
            await stranger.clear_session()
        assert await owner.get_items() == [{"n": 1}, {"n": 2}]
        budgeted = keyed.SealedStore("s", path, encryption_key="a", max_scan_items=1)
        assert await budgeted.get_items(1) == [{"n": 2}]
        with pytest.raises(RuntimeError, match="raise the budget"):
            await budgeted.get_items()
        for store in (owner, other, unkeyed, budgeted):
            store.close()

    anyio.run(scenario)
