"""ARIB-LIMIT-001 on oas-redis, outside the harness: RedisSession.get_items(limit=0) of
openai-agents-session 0.1.0 returns the whole history instead of no items. get_items reads
LRANGE key -limit -1, and -0 is 0: the range from the first element. Its own docstring says
"When specified, returns the most recent `limit` items". Run in the oas-redis
environment of `nox -s ecosystem`; exit 1: reproduced."""

from __future__ import annotations

import redis.asyncio as redis_asyncio
from _oas_redis import on_redis, texts
from _repro import run
from openai_agents_session import RedisSession


async def scenario(url: str) -> bool:
    """Three items, then get_items(limit=0); True when it returned any."""
    client = redis_asyncio.from_url(url)
    session = RedisSession(session_id="limit", redis_client=client)
    await session.add_items([{"role": "user", "content": f"m{i}"} for i in range(3)])
    got = await session.get_items(limit=0)
    print(f"add_items([m0, m1, m2]); get_items(limit=0) -> {texts(got)} (expected [])")
    await client.aclose()
    return bool(got)


if __name__ == "__main__":
    run(lambda: on_redis(scenario))
