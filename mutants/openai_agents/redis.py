"""Hand-written mutants of RedisSession (overrides, our own code; one defect each)."""

from __future__ import annotations

from typing import Any

from arib.mutants.base import handwritten, load_class

REDIS = "agents.extensions.memory.redis_session"


@handwritten(
    target="redis-from-url",
    module=REDIS,
    qualname="RedisSession.ping",
    defect="cached health: ping() answers from its last successful PING instead of asking "
    "the server, so a server that went down still looks healthy",
)
def redis_ping_cached_answer() -> None:
    cls = load_class(REDIS, "RedisSession")
    original = cls.ping

    async def ping(self: Any) -> bool:
        if self.__dict__.get("_arib_last_ping"):
            self._check_not_closed()
            return True
        answer = await original(self)
        self.__dict__["_arib_last_ping"] = answer
        return answer  # type: ignore[no-any-return]

    cls.ping = ping


@handwritten(
    target="redis-from-url",
    module=REDIS,
    qualname="RedisSession.add_items",
    defect="a connection failure swallowed: add_items returns normally when the connection "
    "drops in the middle of its transaction, so the caller believes a lost batch was stored",
)
def redis_add_reports_success_on_connection_error() -> None:
    from redis.exceptions import ConnectionError as RedisConnectionError
    from redis.exceptions import WatchError

    cls = load_class(REDIS, "RedisSession")
    original = cls.add_items

    async def add_items(self: Any, items: list[Any]) -> None:
        try:
            await original(self, items)
        except (RedisConnectionError, WatchError):
            return

    cls.add_items = add_items


@handwritten(
    target="redis-from-url",
    module=REDIS,
    qualname="RedisSession._pop_item_locked",
    defect="blind retry of RPOP: when the reply of RPOP is lost with the connection, the pop "
    "sends RPOP again, so the server removes two items and the first is lost",
)
def redis_pop_retries_blindly() -> None:
    from redis.exceptions import ConnectionError as RedisConnectionError

    cls = load_class(REDIS, "RedisSession")
    original = cls._pop_item_locked

    async def _pop_item_locked(self: Any) -> Any:
        try:
            return await original(self)
        except RedisConnectionError:
            return await original(self)

    cls._pop_item_locked = _pop_item_locked


@handwritten(
    target="redis-from-url",
    module=REDIS,
    qualname="RedisSession.close",
    defect="close pulls the client from under in-flight calls: close() marks the session "
    "closed and releases the client without waiting for the calls that hold the session lock",
)
def redis_close_pulls_the_client() -> None:
    cls = load_class(REDIS, "RedisSession")

    async def close(self: Any) -> None:
        if not self._owns_client:
            return
        self._closed = True
        if not self._client_released:
            self._client_released = True
            await self._redis.aclose()

    cls.close = close
