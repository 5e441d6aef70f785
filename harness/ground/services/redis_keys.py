"""Keys on a user's own Redis (``REDIS_URL``): under one prefix per run, given an expiry, and
removed at the end of the run.

The harness's private redis-server dies with its run, keys and all. A server that ``REDIS_URL``
names is the user's: what a run writes there must not stay. So, while a run uses one,
``ServiceManager`` sets ``ARIB_REDIS_RUN`` (inherited by every child) to a fresh id; the Redis
lanes then put every key under ``arib:<run id>:`` (``key_prefix``), each trial gives its keys an
expiry of ``KEY_TTL_S`` when its store is disposed (``EXPIRE ... NX``: a ttl the backend set
itself, which a check may be measuring, is kept), and the manager deletes every key of the run
when it stops (the end of the run, also on an exception or a stop signal). On start it also gives
an expiry to ``arib:`` keys that have none, left by a run that was killed (SIGKILL) before it
could delete them. On the private server nothing of this runs: its measurements are unchanged.
"""

from __future__ import annotations

import os
import secrets
from typing import Any

RUN_ENV = "ARIB_REDIS_RUN"
KEY_TTL_S = 3600


def run_id() -> str | None:
    """The id of this run's keys on a user's Redis; None on the harness's own server."""
    return os.environ.get(RUN_ENV) or None


def begin_run() -> str:
    """Start a run on a user's Redis: a fresh id, exported to the children."""
    value = secrets.token_hex(6)
    os.environ[RUN_ENV] = value
    return value


def key_prefix(tag: str) -> str:
    """The key prefix of a trial's store (``tag``): under the run's id on a user's Redis."""
    run = run_id()
    return f"arib:{tag}" if run is None else f"arib:{run}:{tag}"


def _client(url: str) -> Any:
    import redis

    return redis.Redis.from_url(url, socket_timeout=10, socket_connect_timeout=10)


def _expire(client: Any, key: Any, seconds: int) -> None:
    """EXPIRE NX (Redis 7); on an older server, only when the key has no ttl yet."""
    import redis

    try:
        client.expire(key, seconds, nx=True)
    except redis.exceptions.ResponseError:
        if client.ttl(key) == -1:
            client.expire(key, seconds)


async def expire_trial_keys(url: str, prefix: str, seconds: int = KEY_TTL_S) -> int:
    """Give every key under ``prefix`` that has no ttl an expiry; how many keys it saw."""
    import redis.asyncio as redis_asyncio

    client: Any = redis_asyncio.from_url(url)
    seen = 0
    try:
        async for key in client.scan_iter(match=f"{prefix}:*", count=500):
            seen += 1
            try:
                await client.expire(key, seconds, nx=True)
            except Exception:  # noqa: BLE001 - an older server: no NX
                if await client.ttl(key) == -1:
                    await client.expire(key, seconds)
    finally:
        await client.aclose()
    return seen


def delete_run_keys(url: str, run: str) -> int:
    """Delete every key of the run ``run``; how many were deleted."""
    client = _client(url)
    deleted = 0
    try:
        batch: list[Any] = []
        for key in client.scan_iter(match=f"arib:{run}:*", count=500):
            batch.append(key)
            if len(batch) == 500:
                deleted += int(client.delete(*batch))
                batch = []
        if batch:
            deleted += int(client.delete(*batch))
    finally:
        client.close()
    return deleted


def expire_leftovers(url: str, seconds: int = KEY_TTL_S) -> int:
    """Give an expiry to every ``arib:`` key with none (left by a killed run); how many."""
    client = _client(url)
    given = 0
    try:
        for key in client.scan_iter(match="arib:*", count=500):
            if client.ttl(key) == -1:
                _expire(client, key, seconds)
                given += 1
    finally:
        client.close()
    return given
