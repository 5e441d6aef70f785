"""arib.api.capability: the default checks follow from what the object offers; claims the
object contradicts are refused; a probe that raises is reported with its cause."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from arib.api import Capability, Report, lane, validate
from arib.api.capability import DEFAULT_CHECKS, OUT_OF_REACH, needs, plan, probe
from arib.api.lane import as_lane
from arib.checks.registry import get_check, load_checks
from arib.ground.model import Verdict
from tests.userstore import capable
from tests.userstore.faulty import raising_store
from tests.userstore.stores import json_store

CLOSE_CHECKS = ("ARIB-CONC-002", "ARIB-CONC-003", "ARIB-DRAIN-001", "ARIB-RELEASE-001")
PLAIN = ("ARIB-CONC-001", "ARIB-ORDER-001", "ARIB-POP-001", "ARIB-CLEAR-001", "ARIB-ISO-001",
         "ARIB-FIDELITY-001", "ARIB-ATOM-001", "ARIB-CANCEL-001", "ARIB-FRESH-001",
         "ARIB-ISO-002", "ARIB-DUR-001")
SMALL = {"ARIB-CONC-001": {"writers": 4, "appends": 10}}


def ids(made) -> list[str]:  # type: ignore[no-untyped-def]
    return [c.id for c in made.run]


def test_needs_come_from_the_check_spec_and_the_table():
    for check_id in CLOSE_CHECKS:  # requires_close / requires_terminal_close on the CheckSpec
        assert Capability.CLOSE in needs(get_check(check_id))
    assert needs(get_check("ARIB-CONC-001")) == ()
    assert Capability.BRANCHES in needs(get_check("ARIB-BRANCH-001"))
    assert set(DEFAULT_CHECKS) <= {c.id for c in load_checks()}


def test_a_store_without_close_runs_the_plain_and_limit_checks_and_lists_the_rest():
    made = plan(as_lane(json_store), None)
    assert ids(made) == [*PLAIN, "ARIB-WINDOW-001"]
    for check_id in CLOSE_CHECKS:
        assert made.skipped[check_id] == "needs close(): JsonFileSession has no callable close()"
    assert made.skipped["ARIB-BRANCH-001"].startswith("needs branches: JsonFileSession lacks "
                                                      "create_branch_from_turn")
    assert made.skipped["ARIB-CORRUPT-001"] == OUT_OF_REACH  # not a default: listed anyway
    everything = {c.id for c in load_checks()}
    assert set(ids(made)) | set(made.skipped) == everything and not made.errors
    assert not made.lane.claims.has_close


def test_a_close_found_on_the_object_brings_the_close_checks_and_the_claims():
    made = plan(as_lane(capable.closing_store), None)
    assert ids(made)[-4:] == list(CLOSE_CHECKS)
    assert made.lane.claims.has_close and not made.lane.claims.close_is_async
    found = plan(as_lane(capable.async_closing_store), None).lane.claims
    assert found.has_close and found.close_is_async
    closed = next(f for f in made.capabilities if f.capability is Capability.CLOSE)
    assert closed.present and closed.evidence == "ClosingSession has a sync close()"


def test_a_declared_claim_is_kept_and_a_contradicted_one_is_refused():
    made = plan(capable.lying_store, None)
    assert made.lane.claims.has_close  # stated: kept, to be verified, never overwritten
    assert "ARIB-CONC-003" in made.skipped and "ARIB-CONC-001" in ids(made)
    report = validate(capable.lying_store, checks=["ARIB-CONC-001"], params=SMALL)
    finding = report["ARIB-CONC-001"]
    assert finding.verdict is Verdict.ERROR and not report.passed
    assert "claims has_close=True but JsonFileSession has no callable close()" in finding.reason
    assert "@lane(...) on tests.userstore.capable.lying_store" in finding.reason
    # by default too: every check that runs is refused with the same reason
    everything = validate(capable.lying_store, trials=1)
    assert {f.verdict for f in everything} == {Verdict.ERROR} and not everything.passed
    assert all("claims has_close=True" in (f.reason or "") for f in everything)
    # stated the other way round: the object's close() contradicts has_close=False
    denied = lane(capable.closing_store, has_close=False)
    assert not plan(denied, None).lane.claims.has_close


def test_a_probe_that_raises_is_reported_with_its_cause():
    probed = probe(as_lane(capable.unreadable_store))
    branches = probed.get(Capability.BRANCHES)
    assert branches is not None and not branches.present
    assert branches.error == "probing it raised RuntimeError('branch table unreadable')"
    made = plan(as_lane(capable.unreadable_store), None)
    for check_id in ("ARIB-BRANCH-001", "ARIB-BRANCH-003", "ARIB-TURNS-001"):
        assert "RuntimeError('branch table unreadable')" in made.errors[check_id]
        assert check_id not in made.skipped  # never silently "not supported"


def test_a_probe_error_fails_the_report_naming_the_cause():
    report = validate(capable.unreadable_store, checks=None, trials=1, params=SMALL)
    assert not report.passed
    assert report["ARIB-BRANCH-003"].verdict is Verdict.ERROR
    text = str(report).replace("\n             ", " ")
    assert "could not tell whether the store offers branches" in text
    assert "RuntimeError('branch table unreadable')" in text
    # the checks it could judge ran
    assert report["ARIB-CONC-001"].verdict is Verdict.HELD


def test_a_factory_that_cannot_be_probed_still_reports_why():
    made = plan(as_lane(raising_store), None)
    assert ids(made) == list(PLAIN)
    assert "cannot open the store" in made.skipped["ARIB-CONC-002"]


def test_the_report_lists_what_did_not_run_with_the_reason():
    made = plan(as_lane(json_store), None)
    report = Report("pkg.store", "store", 0, (), 0.0, skipped=made.skipped,
                    capabilities=made.capabilities)
    text = str(report).replace("\n" + " " * 17, " ")  # wrapped lines joined
    assert ("\n  not run        ARIB-CONC-002, ARIB-CONC-003, ARIB-DRAIN-001, ARIB-RELEASE-001, "
            "ARIB-USAGE-003: needs close(): JsonFileSession has no callable close()\n") in text
    assert "ARIB-CORRUPT-001" in text and "name it in checks= to run it" in text
    data = report.to_json()
    assert data["skipped"]["ARIB-CONC-002"].startswith("needs close()")
    assert {"capability": "close()", "present": False,
            "evidence": "JsonFileSession has no callable close()"} in data["capabilities"]


def test_the_readme_table_names_what_each_capability_is_needed_by():
    readme = (Path(__file__).resolve().parent.parent / "harness" / "api" / "README.md")
    rows = [line.split("|") for line in readme.read_text().splitlines()
            if line.startswith("| ") and "ARIB-" in line]
    documented = {row[1].strip().strip("`()"): set(re.findall(r"ARIB-[A-Z]+-\d{3}", row[3]))
                  for row in rows}
    assert documented.pop("the `Session` protocol") == {
        i for i in DEFAULT_CHECKS if not needs(get_check(i))}
    for capability in Capability:
        assert documented[capability.value.strip("()")] == {
            i for i in DEFAULT_CHECKS if capability in needs(get_check(i))}, capability


def test_a_write_after_close_accepted_silently_fails_plain_validate():
    report = validate(capable.leaky_close_store, trials=1)  # no checks= given
    assert not report.passed
    finding = report["ARIB-CONC-003"]
    assert finding.verdict is Verdict.VIOLATED, finding
    assert "add=silent_commit" in finding.samples[0]


@pytest.mark.parametrize("factory", [capable.closing_store, capable.async_closing_store])
def test_a_store_whose_close_ends_the_session_keeps_every_default(factory):
    report = validate(factory, trials=1)
    assert report.passed, report
    verdicts = {f.invariant_id: f.verdict for f in report}
    assert set(CLOSE_CHECKS) <= set(verdicts) and not set(CLOSE_CHECKS) & set(report.skipped)
    for check_id in CLOSE_CHECKS[:3]:
        assert verdicts.pop(check_id) is Verdict.HELD
    # it keeps no file open: RELEASE-001 abstains, naming what it found on the object
    assert verdicts.pop("ARIB-RELEASE-001") is Verdict.NOT_APPLICABLE
    assert "holds no file under its store folder open" in report["ARIB-RELEASE-001"].reason
    assert set(verdicts.values()) == {Verdict.HELD}


def test_a_stated_non_terminal_close_is_verified_and_its_checks_abstain():
    made = plan(capable.flushing_store, None)
    assert made.lane.claims.has_close and not made.lane.claims.close_is_terminal  # found + stated
    report = validate(capable.flushing_store, checks=["ARIB-CONC-003", "ARIB-CONC-002"], trials=1)
    for finding in report:
        assert finding.verdict is Verdict.NOT_APPLICABLE, finding
        assert "close() only flushes a cache" in finding.reason
        assert "verified: a read after close() works" in finding.reason
