"""ARIB-ISO-002: X and X:counter stay separate sessions on the reference, the SQLite lanes and
(slow, real redis-server) both Redis lanes; its hand-written mutants are violated."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from arib.ground.model import Verdict
from arib.targets.registry import get_target
from tests.checkrun import assert_holds_with_its_trials, assert_mutant_violates, on_redis, run_small

SMALL = {"trials": 2}


def test_holds_on_the_reference() -> None:
    assert_holds_with_its_trials("ARIB-ISO-002", SMALL)


def test_a_clear_that_takes_suffixed_ids_loses_the_other_session() -> None:
    assert_mutant_violates("ARIB-ISO-002", SMALL, "reference_clear_takes_suffixed_ids", "lost")


@pytest.mark.parametrize("lane", ["sqlite-file", "sqlalchemy-sqlite-memory"])
def test_holds_on_sql_lanes(lane: str) -> None:
    finding = run_small("ARIB-ISO-002", SMALL, lane=get_target(lane))
    assert finding.verdict is Verdict.HELD, finding.samples


@pytest.mark.slow
@on_redis
@pytest.mark.parametrize("lane", ["redis-from-url", "redis-injected-client"])
def test_holds_on_the_redis_lanes(lane: str, redis_services: Mapping[str, str]) -> None:
    finding = run_small("ARIB-ISO-002", SMALL, lane=get_target(lane), timeout_s=300,
                        services=redis_services)
    assert finding.verdict is Verdict.HELD, finding.samples


@pytest.mark.slow
@on_redis
def test_an_over_strict_append_is_refused_service(redis_services: Mapping[str, str]) -> None:
    finding = run_small("ARIB-ISO-002", SMALL, "redis_append_checks_every_key_type",
                        get_target("redis-injected-client"), 300, redis_services)
    assert finding.verdict is Verdict.VIOLATED
    assert "append_refused" in finding.modes
