"""ARIB-NET-001 on oas-redis, outside the harness: RedisSession.pop_item() of
openai-agents-session 0.1.0, cancelled while its RPOP is on its way to the server, still removes
an item after the caller has seen the cancellation; the item is returned to nobody.

A small asyncio TCP relay of our own stands between the session's redis-py client and a
throwaway redis-server; it holds the next request 0.3 s (a slow network: the bytes were sent,
the server gets them late) and then delivers it even if the client has gone, as a real network
would. The caller cancels the pop 0.1 s in. Right after the cancellation the history still has
every item; 0.5 s later it has one less. The check expects a call that ended to be settled: it
took effect (and the caller knows) or it never will. Run in the oas-redis environment of `nox -s
ecosystem`; exit 1: reproduced."""

from __future__ import annotations

import asyncio
import contextlib
from urllib.parse import urlsplit, urlunsplit

import redis.asyncio as redis_asyncio
from _oas_redis import on_redis
from _repro import run
from openai_agents_session import RedisSession

HOLD_S, CANCEL_AFTER_S, SETTLE_S = 0.3, 0.1, 0.5


class Relay:
    """Forwards TCP both ways; ``hold`` delays the next client-to-server chunk once."""

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port, self.hold = host, port, 0.0

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """One client connection, relayed to the server until both sides end."""
        up_reader, up_writer = await asyncio.open_connection(self.host, self.port)

        async def to_server() -> None:
            while data := await reader.read(65536):
                if self.hold:
                    delay, self.hold = self.hold, 0.0
                    await asyncio.sleep(delay)
                up_writer.write(data)  # delivered even when the client has gone meanwhile
                await up_writer.drain()
            up_writer.close()

        async def to_client() -> None:
            while data := await up_reader.read(65536):
                with contextlib.suppress(ConnectionError):
                    writer.write(data)
                    await writer.drain()
            writer.close()

        await asyncio.gather(to_server(), to_client(), return_exceptions=True)


async def scenario(url: str) -> bool:
    """Seed 3 items, pop through the relay, cancel; True when an item goes after the cancel."""
    parts = urlsplit(url)
    relay = Relay(parts.hostname or "127.0.0.1", parts.port or 6379)
    server = await asyncio.start_server(relay.serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    netloc = parts.netloc.rsplit(":", 1)[0] + f":{port}"
    relayed = redis_asyncio.from_url(urlunsplit(parts._replace(netloc=netloc)))
    direct = redis_asyncio.from_url(url)
    observer = RedisSession(session_id="net", redis_client=direct)
    session = RedisSession(session_id="net", redis_client=relayed)
    await observer.add_items([{"role": "user", "content": f"m{i}"} for i in range(3)])
    await session.get_items()  # connect and authenticate through the relay first
    relay.hold = HOLD_S
    pop = asyncio.create_task(session.pop_item())
    await asyncio.sleep(CANCEL_AFTER_S)
    pop.cancel()
    try:
        got = await pop
        outcome = f"returned {got!r}"
    except asyncio.CancelledError:
        outcome = "cancelled"
    at_end = len(await observer.get_items())
    await asyncio.sleep(SETTLE_S)
    later = len(await observer.get_items())
    print(f"3 items; pop_item() through a relay holding its request {HOLD_S} s, cancelled "
          f"after {CANCEL_AFTER_S} s: {outcome}, {at_end} item(s) when it ended, {later} "
          f"{SETTLE_S} s later")
    for client in (relayed, direct):
        await client.aclose()
    server.close()
    return outcome == "cancelled" and later < at_end


if __name__ == "__main__":
    run(lambda: on_redis(scenario))
