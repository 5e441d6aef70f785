"""A lane's survey plan: mutants keyed by their lane, named inputs, reach, closed guards."""

from __future__ import annotations

import dataclasses

from arib.caches.inputs import Executed
from arib.ground.keys import MutantKey
from arib.ground.model import MutantStatus
from arib.mutants.pool import generated_for_lane
from arib.survey.plan import Plan, never_fires, not_applicable
from arib.targets.base import Claims
from arib.targets.openai_agents.reference import REFERENCE

S = MutantStatus
REPORT = generated_for_lane(REFERENCE.name)
# a lane whose close() is a no-op: it never ends the session
OPEN_CLOSE = dataclasses.replace(
    REFERENCE, name="reference-open-close",
    claims=Claims(has_close=True, close_is_async=True, close_is_terminal=False,
                  close_note="test lane: close() is a no-op"))


def test_a_plan_keys_each_mutant_by_its_own_lane() -> None:
    mutant = REPORT.mutants[0]
    plan = Plan(OPEN_CLOSE)
    assert plan.key(mutant) == MutantKey(OPEN_CLOSE.name, mutant.id) != mutant.key


def test_a_check_whose_inputs_cannot_be_named_gets_a_version_bound_key() -> None:
    plan = Plan(REFERENCE)
    plan.executed = {"A": [Executed(frozenset(), frozenset()), None],
                     "B": [Executed(frozenset(), frozenset())]}
    assert plan.inputs("A") is None and plan.inputs("missing") is None
    assert plan.inputs("B") == {"functions": {}, "distributions": {}}
    plan.named["A"] = {"functions": {"f": "x"}}  # kept from a reused clean base
    assert plan.inputs("A") == {"functions": {"f": "x"}}


def test_a_check_reaches_a_mutant_whose_lines_it_ran_or_whose_lines_are_unknown() -> None:
    mapped, unmapped = REPORT.mutants[:2]
    plan = Plan(REFERENCE, mutant_lines={mapped.id: frozenset({5}), unmapped.id: None},
                coverage={"A": frozenset({5, 6}), "B": frozenset({7})})
    assert plan.reaches("A", mapped) and not plan.reaches("B", mapped)
    assert not plan.reaches("never-ran", mapped)
    assert plan.reaches("B", unmapped) and plan.reaches("never-ran", unmapped)


def test_a_closed_guard_is_not_applicable_only_where_close_never_ends_the_session() -> None:
    guards = {m.id for m in REPORT.mutants if m.operator == "drop_closed_guard"}
    assert guards
    assert not never_fires(REFERENCE) and never_fires(OPEN_CLOSE)
    plan = Plan(OPEN_CLOSE, report=REPORT)
    not_applicable(plan, None)  # the claims probe verified the lane's claims
    assert set(plan.ignored) == guards
    for status, reason in plan.ignored.values():
        assert status is S.NOT_APPLICABLE
        assert "close() does not end the session (test lane: close() is a no-op)" in reason
    unverified = Plan(OPEN_CLOSE, report=REPORT)
    not_applicable(unverified, "claims probe error: boom")  # claims not verified: none set aside
    assert unverified.ignored == {}
