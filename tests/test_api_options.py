"""arib.api: a user factory takes constructor options by keyword (``*, ttl=None``), found on
its signature; the checks that open an instance with them run by default when it takes them,
are listed as not run with the reason when it does not, and judge the store through them."""

from __future__ import annotations

from pathlib import Path

import pytest

from arib.api import Capability, lane, validate
from arib.api.capability import DEFAULT_CHECKS, needs, plan
from arib.api.lane import as_lane, keyword_options, make_session
from arib.checks.registry import get_check
from arib.ground.errors import UsageError
from arib.ground.model import Verdict
from arib.targets.base import BuildContext, NotApplicable
from tests.userstore import options
from tests.userstore.stores import json_store

OPTION_CHECKS = ("ARIB-TTL-001", "ARIB-KEY-001", "ARIB-BUDGET-001", "ARIB-TABLES-001")


def test_the_options_are_read_off_the_signature_never_guessed():
    assert keyword_options(options.expiring_store) == ("ttl",)
    assert keyword_options(options.ttl_ignoring_store) == ("ttl",)  # positional-or-keyword
    assert keyword_options(options.kwargs_store) == ()  # **options names none
    assert keyword_options(json_store.factory) == ()
    spec = as_lane(options.expiring_store).spec()
    assert dict(spec.options) == {"ttl": "keyword parameter 'ttl' of the factory "
                                         "tests.userstore.options.expiring_store"}


def test_an_option_without_a_default_is_refused_naming_it():
    with pytest.raises(UsageError, match=r"'ttl' without a default.*fix: give each a default"):
        lane(options.required_option_store)


def test_the_option_checks_need_their_option():
    for check_id in OPTION_CHECKS:
        assert check_id in DEFAULT_CHECKS
    assert Capability.TTL in needs(get_check("ARIB-TTL-001"))
    assert Capability.KEY in needs(get_check("ARIB-KEY-001"))
    assert Capability.BUDGET in needs(get_check("ARIB-BUDGET-001"))
    assert needs(get_check("ARIB-TABLES-001")) == (Capability.TABLES,)


def test_a_factory_without_the_options_lists_their_checks_as_not_run():
    made = plan(as_lane(json_store), None)
    assert made.skipped["ARIB-TTL-001"] == "needs ttl option: factory json_store takes no " \
                                           "keyword parameter ttl"
    assert made.skipped["ARIB-TABLES-001"] == (
        "needs table options: factory json_store takes no keyword parameter create_tables, "
        "sessions_table, messages_table")
    assert not set(OPTION_CHECKS) & {c.id for c in made.run}
    # **kwargs is not taken as offering an option
    assert "ARIB-TTL-001" in plan(as_lane(options.kwargs_store), None).skipped


def test_a_factory_with_the_options_runs_their_checks():
    made = plan(as_lane(options.many_options_store), None)
    run = [c.id for c in made.run]
    assert {"ARIB-TTL-001", "ARIB-KEY-001", "ARIB-BUDGET-001"} <= set(run)
    assert made.skipped["ARIB-TABLES-001"] == ("needs table options: factory many_options_store "
                                               "takes no keyword parameter sessions_table")
    found = {f.capability: f for f in made.capabilities}
    assert found[Capability.TTL].present and found[Capability.TTL].evidence == (
        "factory many_options_store takes ttl=")
    assert not found[Capability.TABLES].present


def test_an_option_the_factory_lacks_abstains(tmp_path: Path):
    import anyio

    async def build() -> None:
        await make_session(as_lane(json_store), BuildContext(tmp_path, "s", options={"ttl": 1}))

    with pytest.raises(NotApplicable, match=r"takes no keyword parameter 'ttl'"):
        anyio.run(build)
    report = validate(json_store, checks=["ARIB-TTL-001"])  # named: runs, and abstains
    finding = report["ARIB-TTL-001"]
    assert finding.verdict is Verdict.NOT_APPLICABLE, finding
    assert "takes no constructor option 'ttl'" in (finding.reason or "")


def test_the_ttl_reaches_the_factory_and_is_judged():
    held = validate(options.expiring_store, checks=["ARIB-TTL-001"])
    assert held["ARIB-TTL-001"].verdict is Verdict.HELD, held
    broken = validate(options.ttl_ignoring_store, checks=["ARIB-TTL-001"])
    finding = broken["ARIB-TTL-001"]
    assert finding.verdict is Verdict.VIOLATED, finding
    assert "after the ttl returned" in finding.samples[0]


def test_by_default_the_ttl_check_runs_on_a_store_that_takes_a_ttl():
    made = plan(as_lane(options.ttl_ignoring_store), None)
    assert "ARIB-TTL-001" in [c.id for c in made.run]
    assert made.skipped["ARIB-KEY-001"].startswith("needs encryption_key option")


def test_a_signature_that_cannot_be_read_is_reported_not_taken_as_no_option():
    with pytest.raises((ValueError, TypeError)):  # which one depends on the Python version
        keyword_options(options.unreadable_signature_store)
    made = plan(as_lane(options.unreadable_signature_store), None)
    assert "ARIB-CONC-001" in [c.id for c in made.run]  # the factory itself works
    for check_id in OPTION_CHECKS:
        assert check_id not in made.skipped
        assert "could not tell whether the store offers" in made.errors[check_id]
        assert "builtin has invalid signature" in made.errors[check_id] \
            or "probing it raised TypeError" in made.errors[check_id]
