"""openai-agents session backends published by others, as lanes.

- ``oas-redis``: ``RedisSession`` of ``openai-agents-session`` (0.1.0, module
  ``openai_agents_session.redis``) on the harness's Redis (``TargetSpec.service="redis"``),
  built as its README builds it: ``RedisSession(session_id=..., redis_client=<redis.asyncio
  client>, key_prefix=..., ttl=...)``. Every trial's store is a key prefix of its own (the
  documented ``key_prefix``; on a user's Redis under the run's id, arib.ground.services.
  redis_keys), so a second build on the same root reaches the same list. The session stores a
  conversation as one Redis list, ``<key_prefix>:<session_id>`` (its class docstring), which the
  lane's row writer appends to with a client of its own (``Handle.write_undecodable``).

Facts read in the installed package (openai-agents-session 0.1.0): the constructor takes only a
client passed in (no ``from_url``); ``close()`` is ``async`` and its docstring says it "only
closes if the client was created internally. If you passed in your own client, you're
responsible for closing it": with the only construction there is, close() ends nothing, so the
lane claims a non-terminal close citing those words, verified on the object (a read after
close() still works). The adapter closes the client at dispose.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import secrets

from arib.ground.services import redis_keys
from arib.targets.base import BuildContext, Claims, Handle, TargetSpec, quiet_close
from arib.targets.net import service_url
from arib.targets.openai_agents.rows import redis_list_writer

DISTRIBUTION = "openai-agents-session"
REDIS_MODULE = "openai_agents_session.redis"
NAME = "oas-redis"
# Distinguishes this process's key prefixes from those of earlier runs on a user's Redis.
_RUN_TOKEN = secrets.token_hex(4)

CLOSE_NOTE = ("RedisSession.close() docstring, openai-agents-session 0.1.0: 'This only closes "
              "if the client was created internally. If you passed in your own client, you're "
              "responsible for closing it.'; its constructor takes only a client passed in "
              "(redis_client), so close() is a no-op that leaves the session usable")
OPTIONS = {
    "ttl": "RedisSession docstring, openai-agents-session 0.1.0: 'ttl: Time-to-live in seconds "
           "for session data. None means no expiration.'",
}


def key_prefix(ctx: BuildContext) -> str:
    """The Redis key prefix of this trial's store: the same for every build on ``ctx.root``."""
    digest = hashlib.sha256(f"{_RUN_TOKEN}\0{ctx.root}".encode()).hexdigest()
    return redis_keys.key_prefix(f"oas-{digest[:12]}")


async def build_redis(ctx: BuildContext) -> Handle:
    """RedisSession on a client of this adapter, under the trial's key prefix."""
    import redis.asyncio as redis_asyncio

    url = service_url(ctx, "redis", NAME)
    cls = importlib.import_module(REDIS_MODULE).RedisSession
    client = redis_asyncio.from_url(url)  # owned by this adapter, not by the session
    prefix = key_prefix(ctx)
    session = cls(session_id=ctx.session_id, redis_client=client, key_prefix=prefix,
                  ttl=ctx.options.get("ttl"))

    async def dispose() -> None:
        await quiet_close(session)  # documented: ends nothing for a client passed in
        with contextlib.suppress(Exception):
            await client.aclose()
        if redis_keys.run_id() is not None:  # a user's Redis: the run deletes its keys at end
            with contextlib.suppress(Exception):
                await redis_keys.expire_trial_keys(url, prefix)

    async def reopen() -> Handle:
        return await build_redis(ctx)

    return Handle(session=session, reopen=reopen, dispose=dispose,
                  write_undecodable=redis_list_writer(url, f"{prefix}:{ctx.session_id}"))


OAS_REDIS = TargetSpec(
    name=NAME,
    backend="RedisSession",
    module=REDIS_MODULE,
    claims=Claims(has_close=True, close_is_async=True, close_is_terminal=False,
                  close_note=CLOSE_NOTE),
    build=build_redis,
    description="openai-agents-session 0.1.0 RedisSession(redis_client=...) on the harness's "
                "redis-server, a client the adapter owns; documented: close() does not close a "
                "client passed in; one key prefix per trial",
    service="redis",
    options=OPTIONS,
    preload=("redis.asyncio",),
    distribution=DISTRIBUTION,
)

LANES: tuple[TargetSpec, ...] = (OAS_REDIS,)
