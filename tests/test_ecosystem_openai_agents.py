"""The third-party openai-agents lane of targets/ecosystem (arib_ecosystem.openai_agents): what
it declares, that an absent package is not measured naming it, and, where openai-agents-session
is installed (its lock, harness/locks/ecosystem/oas-redis.txt) and redis-server runs, that it
builds, its claims hold on the object both ways, and a second build reads the same store."""

from __future__ import annotations

import asyncio
import importlib
import importlib.util
from pathlib import Path
from typing import Any

import pytest

from arib.ground.services import ServiceManager
from arib.targets.base import BuildContext, Claims, verify_claims, verify_close_scope

ROOT = Path(__file__).resolve().parent.parent
HAVE_PACKAGE = importlib.util.find_spec("openai_agents_session") is not None


@pytest.fixture
def module(monkeypatch: pytest.MonkeyPatch) -> Any:
    """arib_ecosystem.openai_agents, imported from the checkout (no install needed)."""
    monkeypatch.syspath_prepend(str(ROOT / "targets" / "ecosystem"))
    return importlib.import_module("arib_ecosystem.openai_agents")


def test_the_lane_declares_its_package_server_and_documented_close(module: Any) -> None:
    (lane,) = module.LANES
    assert (lane.name, lane.backend, lane.module, lane.service) == (
        "oas-redis", "RedisSession", "openai_agents_session.redis", "redis")
    assert lane.claims == Claims(has_close=True, close_is_async=True, close_is_terminal=False,
                                 close_note=module.CLOSE_NOTE)
    assert "If you passed in your own client, you're responsible" in lane.claims.close_note
    assert set(lane.options) == {"ttl"}
    assert getattr(lane, "distribution", module.DISTRIBUTION) == "openai-agents-session"


@pytest.mark.skipif(HAVE_PACKAGE, reason="openai-agents-session is installed here")
def test_an_absent_package_is_not_measured_naming_it(module: Any) -> None:
    from arib.lanes import absent_backend

    missing = absent_backend(module.LANES[0])
    assert missing is not None and missing.name == "oas-redis"
    assert "openai_agents_session" in missing.reason or \
        "openai-agents-session" in missing.reason


@pytest.fixture(scope="module")
def redis_url() -> Any:
    if not HAVE_PACKAGE:
        pytest.skip("openai-agents-session is not installed (its lock: "
                    "harness/locks/ecosystem/oas-redis.txt)")
    with ServiceManager(environ={}) as manager:
        if manager.availability("redis") is not None:
            pytest.skip("redis-server is not installed")
        yield manager.start("redis").url


def test_builds_claims_hold_and_a_second_build_reads_the_store(
        module: Any, redis_url: str, tmp_path: Path) -> None:
    lane = module.LANES[0]
    item = {"role": "user", "content": "hello"}

    async def scenario() -> None:
        ctx = BuildContext(root=tmp_path / "a", session_id="s1", services={"redis": redis_url})
        other = BuildContext(root=tmp_path / "b", session_id="s1",
                             services={"redis": redis_url})
        handle = await lane.build(ctx)
        try:
            assert verify_claims(lane, handle.session) is None
            await handle.session.add_items([item, {**item, "content": "again"}])
            second = await handle.reopen()
            elsewhere = await lane.build(other)
            try:
                assert [i["content"] for i in await second.session.get_items()] == [
                    "hello", "again"]
                assert await elsewhere.session.get_items() == []  # a store per trial root
            finally:
                await second.dispose()
                await elsewhere.dispose()
            written = await handle.write_undecodable(0) if handle.write_undecodable else ""
            assert written  # the row writer reaches the session's list
            probe = await lane.build(BuildContext(root=tmp_path / "c", session_id="p",
                                                  services={"redis": redis_url}))
            # the documented non-terminal close, verified on the object: a read still works
            assert await verify_close_scope(lane, probe.session) is None
            await probe.dispose()
        finally:
            await handle.dispose()

    asyncio.run(scenario())
