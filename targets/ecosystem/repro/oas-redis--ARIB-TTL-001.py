"""ARIB-TTL-001 on oas-redis, outside the harness: RedisSession(ttl=1) of openai-agents-session
0.1.0 refreshes the key's expiry on every get_items() too (``_refresh_ttl`` after the read), so
reads keep a history alive past the ttl counted from its last write. The check expects the
history gone once the ttl has passed since the last write; the package documents ``ttl`` only
as "Time-to-live in seconds for session data", so this reproduces the behaviour the check
flags, whose reading of the ttl is ours. Run in the oas-redis environment of `nox -s
ecosystem`; exit 1: reproduced."""

from __future__ import annotations

import asyncio
import time

import redis.asyncio as redis_asyncio
from _oas_redis import on_redis
from _repro import run
from openai_agents_session import RedisSession


async def scenario(url: str) -> bool:
    """One write with ttl=1, reads every 0.7 s; True when items remain 2.1 s after the write."""
    client = redis_asyncio.from_url(url)
    session = RedisSession(session_id="ttl", redis_client=client, ttl=1)
    await session.add_items([{"role": "user", "content": "x"}])
    written = time.monotonic()
    for _ in range(3):
        await asyncio.sleep(0.7)
        await session.get_items()
    left = await session.get_items()
    print(f"add_items([x]) with ttl=1, get_items() every 0.7 s: "
          f"{time.monotonic() - written:.1f} s after the only write, {len(left)} item(s) remain "
          f"(expected 0)")
    await client.aclose()
    return bool(left)


if __name__ == "__main__":
    run(lambda: on_redis(scenario))
