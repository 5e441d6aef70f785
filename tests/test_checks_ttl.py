"""ARIB-TTL-001, the reference's ttl, and ARIB-CORRUPT-001 on the Redis lanes.

Fast tests: the reference's ttl on a real SQLite file; the check holds on the reference, its
hand-written reference mutants are violated, it abstains on a lane without the ttl option.
Slow tests: both checks on real redis-server lanes (clean: held), the Redis hand-written
mutant, and the Redis adapter's writer of undecodable elements.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path

import anyio
import pytest

from arib.checks.registry import get_check
from arib.execute import RunOptions, run_check
from arib.ground.child import run_one
from arib.ground.model import Finding, Verdict
from arib.mutants.registry import forced_broken
from arib.targets.base import BuildContext
from arib.targets.openai_agents.reference import REFERENCE, ReferenceSession
from arib.targets.registry import get_target
from tests.checkrun import assert_holds_with_its_trials, assert_mutant_violates, on_redis, run_small

SMALL: dict[str, dict[str, int]] = {
    "ARIB-TTL-001": {"trials": 1, "ttl": 1},
    "ARIB-CORRUPT-001": {"trials": 2, "batches": 3},
}
REDIS_LANES = ("redis-from-url", "redis-injected-client")


def item(name: str) -> dict[str, str]:
    return {"role": "user", "content": name}


# --- the reference's ttl --------------------------------------------------------------------


def test_reference_ttl_expires_the_whole_history_for_every_instance(tmp_path: Path) -> None:
    async def main() -> None:
        s = ReferenceSession("s", tmp_path / "r.db", ttl=0.3)
        other = ReferenceSession("s", tmp_path / "r.db")  # no ttl of its own
        await s.add_items([item("a"), item("b")])
        assert await other.get_items() == [item("a"), item("b")]
        await anyio.sleep(0.45)
        assert await other.get_items() == []
        assert await s.pop_item() is None
        await s.add_items([item("c")])
        assert await s.get_items() == [item("c")]
        await s.close()
        await other.close()

    anyio.run(main)


def test_reference_ttl_is_restarted_by_each_write_and_absent_without_one(
        tmp_path: Path) -> None:
    async def main() -> None:
        s = ReferenceSession("s", tmp_path / "r.db", ttl=0.4)
        keep = ReferenceSession("k", tmp_path / "r.db")
        await keep.add_items([item("kept")])
        start = time.monotonic()
        await s.add_items([item("a")])
        await anyio.sleep(0.25)
        await s.add_items([item("b")])
        await anyio.sleep(max(0.0, start + 0.5 - time.monotonic()))
        # 0.5 s after the first write, under 0.4 s after the second: both still there.
        got = await s.get_items()
        if time.monotonic() < start + 0.25 + 0.4:
            assert got == [item("a"), item("b")]
        await anyio.sleep(0.5)
        assert await s.get_items() == []
        assert await keep.get_items() == [item("kept")]  # another session, no ttl
        await s.close()
        await keep.close()

    anyio.run(main)


def test_reference_clear_forgets_a_pending_expiry(tmp_path: Path) -> None:
    async def main() -> None:
        s = ReferenceSession("s", tmp_path / "r.db", ttl=0.2)
        await s.add_items([item("a")])
        await s.clear_session()
        plain = ReferenceSession("s", tmp_path / "r.db")
        await plain.add_items([item("after the clear")])
        await anyio.sleep(0.3)
        assert await plain.get_items() == [item("after the clear")]
        await s.close()
        await plain.close()

    anyio.run(main)


def test_reference_builder_passes_the_ttl_option_on(tmp_path: Path) -> None:
    async def main() -> None:
        handle = await REFERENCE.build(BuildContext(tmp_path, "s", options={"ttl": 7}))
        assert handle.session.ttl == 7
        again = await handle.reopen()
        assert again.session.ttl == 7
        await again.dispose()
        await handle.dispose()

    anyio.run(main)


# --- ARIB-TTL-001 on the reference ----------------------------------------------------------


def test_ttl_holds_on_the_reference() -> None:
    assert_holds_with_its_trials("ARIB-TTL-001", SMALL["ARIB-TTL-001"])


@pytest.mark.parametrize(("mutant", "mode"), [
    ("reference_ttl_ignored", "not_expired"),
    ("reference_ttl_in_milliseconds", "expired_early"),
])
def test_ttl_hand_written_reference_mutant_is_violated(mutant: str, mode: str) -> None:
    assert_mutant_violates("ARIB-TTL-001", SMALL["ARIB-TTL-001"], mutant, mode)


def test_ttl_forced_broken_reference_is_violated() -> None:
    check = get_check("ARIB-TTL-001")
    opts = RunOptions(params=check.resolve_params(SMALL["ARIB-TTL-001"]))
    outcome = run_one(lambda: run_check(check, REFERENCE, opts, forced_broken()), 90)
    assert outcome.value is not None, outcome.detail
    assert outcome.value.verdict is Verdict.VIOLATED
    assert "write_refused" in outcome.value.modes


@pytest.mark.parametrize("lane", ["sqlite-file", "encrypted-sqlite"])
def test_ttl_abstains_on_a_lane_without_the_option(lane: str) -> None:
    finding = run_small("ARIB-TTL-001", SMALL["ARIB-TTL-001"], lane=get_target(lane))
    assert finding.verdict is Verdict.NOT_APPLICABLE
    assert "'ttl'" in (finding.reason or "")


def test_redis_lanes_declare_the_documented_ttl() -> None:
    for lane in REDIS_LANES:
        assert "ttl" in get_target(lane).options
        assert "seconds" in get_target(lane).options["ttl"]


# --- on a real redis-server -----------------------------------------------------------------

def run_on(lane: str, check_id: str, redis_services: Mapping[str, str],
           mutant: str | None = None) -> Finding:
    return run_small(check_id, SMALL[check_id], mutant, get_target(lane), 300, redis_services)


@pytest.mark.slow
@on_redis
@pytest.mark.parametrize("lane", REDIS_LANES)
@pytest.mark.parametrize("check_id", sorted(SMALL))
def test_redis_lane_holds(lane: str, check_id: str, redis_services: Mapping[str, str]) -> None:
    finding = run_on(lane, check_id, redis_services)
    assert finding.verdict is Verdict.HELD, (finding.samples, finding.reason)


@pytest.mark.slow
@on_redis
@pytest.mark.parametrize("lane", REDIS_LANES)
def test_redis_ttl_that_spares_the_messages_is_seen(lane: str,
                                                    redis_services: Mapping[str, str]) -> None:
    finding = run_on(lane, "ARIB-TTL-001", redis_services, "redis_ttl_spares_the_messages")
    assert finding.verdict is Verdict.VIOLATED and "not_expired" in finding.modes


@pytest.mark.slow
@on_redis
@pytest.mark.parametrize("lane", REDIS_LANES)
def test_redis_writer_leaves_elements_the_session_skips(lane: str, tmp_path: Path,
                                                        redis_services: Mapping[str, str]) -> None:
    async def main() -> None:
        handle = await get_target(lane).build(BuildContext(tmp_path, "s", dict(redis_services)))
        try:
            assert handle.write_undecodable is not None
            await handle.session.add_items([item("a")])
            written = [await handle.write_undecodable(n) for n in range(4)]
            assert all("pushed onto" in w and ":s:messages" in w for w in written)
            raw = await handle.session._redis.lrange(handle.session._messages_key, 0, -1)
            assert len(raw) == 5  # the item and the four elements, on the session's own list
            assert await handle.session.get_items() == [item("a")]
            assert await handle.session.get_items(1) == [item("a")]
            assert await handle.session.pop_item() == item("a")
        finally:
            await handle.dispose()

    anyio.run(main)
