"""ARIB-COMPACT-004 on oas-redis, outside the harness: an agent turn compacting its history
through the SDK's OpenAIResponsesCompactionSession over EncryptedSession (openai-agents 0.24.0)
over RedisSession of openai-agents-session 0.1.0 deletes a stored envelope that the session's
key cannot authenticate (here: one written under another key), which the compaction never saw.

EncryptedSession hides such an envelope from every read. The package's RedisSession offers no
way to replace part of its list, so the SDK's compaction replaces the whole history
(clear_session, then add_items) once it has seen all of what it can read, and the envelope it
could not read goes with it. EncryptedSession's docstring promises a reclaim of "a contiguous
prefix of authenticated expired envelopes" only "on native SQLite and SQLAlchemy stores"; the
SDK's own RedisSession replaces the whole list too (the family's redis-from-url lane violates
this check at a similar rate). Run in the oas-redis environment of `nox -s ecosystem`; exit 1:
reproduced."""

from __future__ import annotations

import redis.asyncio as redis_asyncio
from _oas_redis import StandInCompactClient, compacting_turn, on_redis
from _repro import run
from agents.extensions.memory import EncryptedSession
from openai_agents_session import RedisSession


async def scenario(url: str) -> bool:
    """An envelope under another key, then two turns under X's key; a compacting turn through
    X's EncryptedSession; True when the other key's envelope is gone."""
    client = redis_asyncio.from_url(url)
    raw = RedisSession(session_id="x", redis_client=client)
    other = EncryptedSession("x", raw, encryption_key="another key", ttl=600)
    await other.add_items([{"role": "user", "content": "written under another key"}])
    mine = EncryptedSession("x", raw, encryption_key="x's key", ttl=600)
    await mine.add_items([{"role": role, "content": f"{role[0]}{i}"}
                          for i in range(2) for role in ("user", "assistant")])
    before = await raw.get_items()
    print(f"raw rows before: {len(before)} (1 under another key, {len(before) - 1} under X's); "
          f"X reads {len(await mine.get_items())} items, the other key reads "
          f"{len(await other.get_items())}")
    client_api = StandInCompactClient()
    await compacting_turn(mine, client_api, "q2")
    after = await raw.get_items()
    kept = await other.get_items()
    print(f"compact requests: {client_api.requests}; raw rows after: {len(after)}; "
          f"X reads {len(await mine.get_items())} items, the other key reads {len(kept)} "
          f"(expected 1: the envelope X cannot authenticate stays)")
    await client.aclose()
    return client_api.requests == 1 and not kept


if __name__ == "__main__":
    run(lambda: on_redis(scenario))
