"""ARIB-COMPACT-001 on oas-redis, outside the harness: an agent turn run with
SessionSettings(limit=0) (send none of the stored history) on RedisSession of
openai-agents-session 0.1.0, wrapped in the SDK's OpenAIResponsesCompactionSession (openai-agents
0.24.0), sends the model the whole stored history and then compacts all of it, where the turn
should have seen none of it and the compaction should have skipped (the stored history was not
in the exchange it matches against).

The cause is the one of oas-redis--ARIB-LIMIT-001.py: get_items(limit=0) reads LRANGE key -0 -1,
the whole list, instead of nothing. This script shows what that costs a compacting agent; it is
not a second defect. Run in the oas-redis environment of `nox -s ecosystem`; exit 1: reproduced.
"""

from __future__ import annotations

import redis.asyncio as redis_asyncio
from _oas_redis import StandInCompactClient, compacting_turn, on_redis, texts
from _repro import run
from openai_agents_session import RedisSession


async def scenario(url: str) -> bool:
    """Two stored turns, then a compacting turn with SessionSettings(limit=0); True when the
    model was sent stored history (which the compaction then replaces)."""
    client = redis_asyncio.from_url(url)
    store = RedisSession(session_id="x", redis_client=client)
    stored = [{"role": role, "content": f"{role[0]}{i}"}
              for i in range(2) for role in ("user", "assistant")]
    await store.add_items(stored)
    inputs: list[object] = []
    compact = StandInCompactClient()
    await compacting_turn(store, compact, "q2", limit=0, inputs=inputs)
    sent = inputs[0] if inputs and isinstance(inputs[0], list) else []
    after = texts(await store.get_items())
    await client.aclose()
    print(f"{len(stored)} stored items; a turn with SessionSettings(limit=0) sent the model "
          f"{len(sent)} items (expected 1: the new question); compact requests: "
          f"{compact.requests} (expected 0: a store without native suffix replacement needs the "
          f"whole history in the exchange); history afterwards: {after}")
    return len(sent) > 1


if __name__ == "__main__":
    run(lambda: on_redis(scenario))
