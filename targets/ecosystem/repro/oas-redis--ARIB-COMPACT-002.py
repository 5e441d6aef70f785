"""ARIB-COMPACT-002 on oas-redis, outside the harness: while an agent turn compacts its history
through the SDK's OpenAIResponsesCompactionSession (openai-agents 0.24.0) over RedisSession of
openai-agents-session 0.1.0, another instance of the same session reads an empty conversation:
neither the history before the compaction nor the one after it.

The package's RedisSession offers no way to replace the history in one step, so the SDK's
compaction replaces it with clear_session() (DEL) and then add_items(summary) (RPUSH), two
commands; a read that reaches Redis between them sees nothing. The SDK's own RedisSession
replaces it in one MULTI/EXEC transaction (its _atomic_replace_items: "rather than a clear/add
gap"), and no reader sees the gap. The gap is one round trip wide, so the script runs rounds
until a reader lands in it (at most ROUNDS). Run in the oas-redis environment of `nox -s
ecosystem`; exit 1: reproduced."""

from __future__ import annotations

import asyncio

import redis.asyncio as redis_asyncio
from _oas_redis import StandInCompactClient, compacting_turn, on_redis
from _repro import run
from openai_agents_session import RedisSession

ROUNDS, STORED = 40, 8


async def one_round(url: str, n: int) -> list[int]:
    """One compacting turn on session ``r<n>`` (STORED items) while a reader on its own client
    reads until the turn ends; the sizes of the empty reads it saw."""
    writer_client, reader_client = redis_asyncio.from_url(url), redis_asyncio.from_url(url)
    store = RedisSession(session_id=f"r{n}", redis_client=writer_client)
    reader = RedisSession(session_id=f"r{n}", redis_client=reader_client)
    await store.add_items([{"role": "user" if i % 2 == 0 else "assistant", "content": f"m{i}"}
                           for i in range(STORED)])
    done, sizes = asyncio.Event(), []

    async def read_until_done() -> None:
        while not done.is_set():
            sizes.append(len(await reader.get_items()))

    reading = asyncio.create_task(read_until_done())
    await compacting_turn(store, StandInCompactClient(), "one more question")
    done.set()
    await reading
    final = len(await reader.get_items())
    await writer_client.aclose()
    await reader_client.aclose()
    empty = [size for size in sizes if size == 0]
    if empty:
        print(f"round {n}: {len(sizes)} reads by another instance during the turn, sizes seen "
              f"{sorted(set(sizes))}; the history was {STORED} items before the turn and "
              f"{final} after it; {len(empty)} read(s) saw 0 items")
    return empty


async def scenario(url: str) -> bool:
    """Compacting rounds until a reader sees the empty gap; True when one did."""
    for n in range(ROUNDS):
        if await one_round(url, n):
            return True
    print(f"{ROUNDS} rounds: no read saw the history empty")
    return False


if __name__ == "__main__":
    run(lambda: on_redis(scenario))
