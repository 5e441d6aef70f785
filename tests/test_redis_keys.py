"""Keys on a user's own Redis (REDIS_URL): under the run's prefix, given an expiry when the
trial's store is disposed, deleted when the run ends; the harness's own server is unchanged."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from arib.ground.services import ServiceManager, redis_keys
from arib.targets.base import BuildContext
from arib.targets.openai_agents.services import REDIS_FROM_URL, REDIS_INJECTED_CLIENT
from tests.checkrun import HAVE_REDIS

pytestmark = pytest.mark.skipif(not HAVE_REDIS, reason="no redis-server binary")


@pytest.fixture(scope="module")
def users_redis() -> Iterator[str]:
    """A redis-server standing in for the user's own: the test names it with REDIS_URL."""
    with ServiceManager(environ={}) as private:
        yield private.start("redis").url


def _client(url: str):
    import redis

    return redis.Redis.from_url(url)


def test_a_run_on_a_users_redis_leaves_no_key_and_keys_get_an_expiry(users_redis, tmp_path):
    client = _client(users_redis)
    client.set("users-own-key", "kept")  # the user's data: never touched
    client.set("arib:old-run:leftover", "x")  # left, with no ttl, by a run killed earlier
    assert os.environ.get(redis_keys.RUN_ENV) is None
    with ServiceManager(environ={"REDIS_URL": users_redis}) as manager:
        info = manager.start("redis")
        assert info.external
        run = redis_keys.run_id()
        assert run is not None and os.environ[redis_keys.RUN_ENV] == run
        assert 0 < client.ttl("arib:old-run:leftover") <= redis_keys.KEY_TTL_S

        async def trial(spec, root: Path) -> list[bytes]:
            root.mkdir()
            handle = await spec.build(BuildContext(root, "s1", manager.services))
            await handle.session.add_items([{"role": "user", "content": "one"}])
            keys = [k for k in client.keys(f"arib:{run}:*") if k not in seen]
            assert keys and all(client.ttl(k) == -1 for k in keys)  # as the backend wrote
            await handle.dispose()
            return keys

        seen: list[bytes] = []
        for spec in (REDIS_FROM_URL, REDIS_INJECTED_CLIENT):
            keys = asyncio.run(trial(spec, tmp_path / spec.name))
            seen += keys
            assert all(0 < client.ttl(k) <= redis_keys.KEY_TTL_S for k in keys), spec.name
        assert len(client.keys(f"arib:{run}:*")) >= 2
    assert client.keys(f"arib:{run}:*") == []  # deleted at the end of the run
    assert redis_keys.RUN_ENV not in os.environ
    assert client.get("users-own-key") == b"kept" and client.ttl("users-own-key") == -1
    client.delete("users-own-key", "arib:old-run:leftover")
    client.close()


def test_a_ttl_the_backend_set_itself_is_kept(users_redis):
    client = _client(users_redis)
    client.set("arib:r:t:own-ttl", "x", ex=30)
    client.set("arib:r:t:no-ttl", "x")

    asyncio.run(redis_keys.expire_trial_keys(users_redis, "arib:r:t", seconds=1000))
    assert 0 < client.ttl("arib:r:t:own-ttl") <= 30
    assert 30 < client.ttl("arib:r:t:no-ttl") <= 1000
    assert redis_keys.delete_run_keys(users_redis, "r") == 2
    client.close()


def test_on_the_harness_own_server_keys_are_as_before(users_redis, monkeypatch):
    monkeypatch.delenv(redis_keys.RUN_ENV, raising=False)
    assert redis_keys.key_prefix("abc") == "arib:abc"
    monkeypatch.setenv(redis_keys.RUN_ENV, "r1")
    assert redis_keys.key_prefix("abc") == "arib:r1:abc"
