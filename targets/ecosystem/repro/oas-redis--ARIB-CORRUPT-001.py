"""ARIB-CORRUPT-001 on oas-redis, outside the harness: one element of the session's Redis list
that is not JSON (another writer's, or a write cut off) makes every RedisSession.get_items() of
openai-agents-session 0.1.0 raise JSONDecodeError, so none of the session's good items can be
read any more; the check expects undecodable rows to be skipped. Run in the oas-redis
environment of `nox -s ecosystem`; exit 1: reproduced."""

from __future__ import annotations

import redis.asyncio as redis_asyncio
from _oas_redis import on_redis, texts
from _repro import run
from openai_agents_session import RedisSession


async def scenario(url: str) -> bool:
    """Two items, a foreign element, one more item; True when get_items() raises."""
    client = redis_asyncio.from_url(url)
    session = RedisSession(session_id="corrupt", redis_client=client)
    await session.add_items([{"role": "user", "content": "m0"}, {"role": "user", "content": "m1"}])
    await client.rpush("openai_agents_session:corrupt", b'{"role": "user", "content": "cut')
    await session.add_items([{"role": "user", "content": "m2"}])
    print("add_items([m0, m1]); another client pushes '{\"role\": \"user\", \"content\": \"cut'; "
          "add_items([m2])")
    try:
        got = await session.get_items()
        print(f"get_items() -> {texts(got)}")
        return False
    except Exception as exc:  # noqa: BLE001 - what the read raised is the observation
        print(f"get_items() raised {type(exc).__name__}: {exc}")
        return True
    finally:
        await client.aclose()


if __name__ == "__main__":
    run(lambda: on_redis(scenario))
