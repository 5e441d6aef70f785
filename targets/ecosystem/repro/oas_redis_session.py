"""Direct reproductions, outside the bench's checks, of what oas-redis showed: RedisSession of
openai-agents-session 0.1.0 used as its README shows, on a throwaway redis-server.

Run in the lane's environment (harness/locks/ecosystem/oas-redis.txt):
    python targets/ecosystem/repro/oas_redis_session.py
Seen here (redis-server 7.0.15): get_items(limit=0) returns all three items and limit=-1 all
but the oldest (ARIB-LIMIT-001, ARIB-WINDOW-001); one element another writer left that is not
JSON makes get_items() raise JSONDecodeError (ARIB-CORRUPT-001); with ttl=1, reads between
writes keep the history alive past the ttl after the last write (ARIB-TTL-001).
"""

from __future__ import annotations

import asyncio

import redis.asyncio as redis_asyncio
from openai_agents_session import RedisSession

from arib.ground.services import ServiceManager


async def scenario(url: str) -> None:
    """The three observations, printed."""
    client = redis_asyncio.from_url(url)
    session = RedisSession(session_id="demo", redis_client=client)
    await session.add_items([{"role": "user", "content": f"m{i}"} for i in range(3)])
    print("get_items(limit=0) ->", [i["content"] for i in await session.get_items(limit=0)])
    print("get_items(limit=-1) ->", [i["content"] for i in await session.get_items(limit=-1)])
    await client.rpush("openai_agents_session:demo", b"{not json")  # another writer's row
    try:
        print("get_items() past a foreign row ->", await session.get_items())
    except Exception as exc:  # noqa: BLE001 - what the read raised is the observation
        print("get_items() past a foreign row raised", type(exc).__name__, exc)
    timed = RedisSession(session_id="ttl", redis_client=client, ttl=1)
    await timed.add_items([{"role": "user", "content": "x"}])
    for _ in range(3):
        await asyncio.sleep(0.7)
        await timed.get_items()
    print("2.1 s after the only write (ttl=1, reads between) ->",
          len(await timed.get_items()), "item(s)")
    await client.aclose()


def main() -> None:
    """On a throwaway redis-server the harness starts and stops."""
    with ServiceManager(environ={}) as manager:
        asyncio.run(scenario(manager.start("redis").url))


if __name__ == "__main__":
    main()
