"""ARIB-COMPACT-003 on oas-redis, outside the harness: an agent turn whose history is compacted
through the SDK's OpenAIResponsesCompactionSession (openai-agents 0.24.0) over RedisSession of
openai-agents-session 0.1.0 deletes an item another instance of the same session appended while
the compact request was in flight.

The package's RedisSession offers no way to replace the history in one step (nor to replace it
only if it is unchanged), so the SDK's compaction falls back to clear_session() and then
add_items(summary), from a history it read after the request: the other instance's append is
acknowledged, then silently gone. The SDK's own RedisSession loses it the same way (its
replacement is one transaction, but it "does not check whether the compaction input is stale",
its docstring says); its SQLite and SQLAlchemy sessions refuse a stale replacement. Run in the
oas-redis environment of `nox -s ecosystem`; exit 1: reproduced."""

from __future__ import annotations

import redis.asyncio as redis_asyncio
from _oas_redis import StandInCompactClient, compacting_turn, on_redis, texts
from _repro import run
from openai_agents_session import RedisSession


async def scenario(url: str) -> bool:
    """Two stored turns; a compacting third turn, another instance appending during its compact
    request; True when that append is gone afterwards."""
    mine, theirs = redis_asyncio.from_url(url), redis_asyncio.from_url(url)
    store = RedisSession(session_id="x", redis_client=mine)
    other = RedisSession(session_id="x", redis_client=theirs)  # another process's instance
    await store.add_items([{"role": role, "content": f"{role[0]}{i}"}
                           for i in range(2) for role in ("user", "assistant")])

    async def other_appends() -> None:
        await other.add_items([{"role": "user", "content": "appended by the other instance"}])
        print(f"during the compact request, the other instance appended; it reads "
              f"{texts(await other.get_items())[-1:]} as its newest item")

    client = StandInCompactClient(during=other_appends)
    await compacting_turn(store, client, "q2")
    after = texts(await other.get_items())
    print(f"compact requests: {client.requests}; history afterwards: {after}")
    await mine.aclose()
    await theirs.aclose()
    return "appended by the other instance" not in after


if __name__ == "__main__":
    run(lambda: on_redis(scenario))
