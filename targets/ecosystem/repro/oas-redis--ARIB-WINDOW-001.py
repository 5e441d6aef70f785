"""ARIB-WINDOW-001 on oas-redis, outside the harness: RedisSession.get_items(limit=-1) of
openai-agents-session 0.1.0 returns every item but the oldest: LRANGE key 1 -1. A negative limit
is not refused, and the answer is neither none nor all of the history. Run in the oas-redis
environment of `nox -s ecosystem`; exit 1: reproduced."""

from __future__ import annotations

import redis.asyncio as redis_asyncio
from _oas_redis import on_redis, texts
from _repro import run
from openai_agents_session import RedisSession


async def scenario(url: str) -> bool:
    """Three items, then get_items(limit=-1); True when it is neither none, all nor refused."""
    client = redis_asyncio.from_url(url)
    session = RedisSession(session_id="window", redis_client=client)
    await session.add_items([{"role": "user", "content": f"m{i}"} for i in range(3)])
    everything = await session.get_items()
    try:
        got = await session.get_items(limit=-1)
    except Exception as exc:  # noqa: BLE001 - a refusal is an allowed answer
        print(f"get_items(limit=-1) refused: {type(exc).__name__}: {exc}")
        return False
    finally:
        await client.aclose()
    print(f"add_items([m0, m1, m2]); get_items(limit=-1) -> {texts(got)} (allowed: [], "
          f"{texts(everything)} or a refusal)")
    return got not in ([], everything)


if __name__ == "__main__":
    run(lambda: on_redis(scenario))
