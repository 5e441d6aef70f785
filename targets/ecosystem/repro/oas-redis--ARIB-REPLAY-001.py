"""ARIB-REPLAY-001 on oas-redis, outside the harness: RedisSession.add_items() of
openai-agents-session 0.1.0, given the same model-output batch twice (items that carry their own
ids, as a retried persist of one turn delivers them), stores it twice; the history then shows
each of those items twice.

add_items is a plain RPUSH: nothing looks at an item's id. No release of the package or of the
SDK documents exactly-once storage of a redelivered batch, and every session backend of
openai-agents 0.24.0 behaves the same (ARIB-REPLAY-001 is violated on all of the family's own
lanes): this records the package's semantics, at-least-once, rather than a broken promise. Run
in the oas-redis environment of `nox -s ecosystem`; exit 1: reproduced."""

from __future__ import annotations

import copy
from collections import Counter

import redis.asyncio as redis_asyncio
from _oas_redis import on_redis
from _repro import run
from openai_agents_session import RedisSession

BATCH = [
    {"id": "msg_1", "type": "message", "role": "assistant", "status": "completed",
     "content": [{"type": "output_text", "text": "looking it up", "annotations": []}]},
    {"id": "fc_1", "type": "function_call", "call_id": "call_1", "name": "lookup",
     "arguments": "{}", "status": "completed"},
]


async def scenario(url: str) -> bool:
    """The batch delivered twice; True when an id is in the history more than once."""
    client = redis_asyncio.from_url(url)
    session = RedisSession(session_id="replay", redis_client=client)
    await session.add_items(BATCH)
    await session.add_items(copy.deepcopy(BATCH))  # the redelivery
    ids = Counter(str(item.get("id")) for item in await session.get_items())
    await client.aclose()
    print(f"add_items([msg_1, fc_1]) twice; get_items() ids: {dict(ids)} (exactly once: "
          f"{{'msg_1': 1, 'fc_1': 1}})")
    return any(count > 1 for count in ids.values())


if __name__ == "__main__":
    run(lambda: on_redis(scenario))
