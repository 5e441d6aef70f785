"""Hand-written mutants of a session's ttl (ARIB-TTL-001): our own code, one defect each."""

from __future__ import annotations

import sqlite3
import time
from typing import Any

from arib.mutants.base import handwritten, load_class

REF = "arib.targets.openai_agents.reference"
REDIS = "agents.extensions.memory.redis_session"


@handwritten(
    target="reference",
    module=REF,
    qualname="ReferenceSession._restart_ttl",
    defect="the ttl is accepted and ignored: no write ever sets an expiry, so an abandoned "
    "conversation stays in the store for ever",
)
def reference_ttl_ignored() -> None:
    cls = load_class(REF, "ReferenceSession")

    def _restart_ttl(self: Any, conn: sqlite3.Connection) -> None:
        return None

    cls._restart_ttl = _restart_ttl


@handwritten(
    target="reference",
    module=REF,
    qualname="ReferenceSession._restart_ttl",
    defect="a unit slip: the ttl is taken as milliseconds, so a conversation in use loses its "
    "history a moment after each write",
)
def reference_ttl_in_milliseconds() -> None:
    cls = load_class(REF, "ReferenceSession")

    def _restart_ttl(self: Any, conn: sqlite3.Connection) -> None:
        if self.ttl is not None:
            conn.execute("INSERT OR REPLACE INTO item_ttl (session_id, expires_at) "
                         "VALUES (?, ?)", (self.session_id, time.time() + self.ttl / 1000))

    cls._restart_ttl = _restart_ttl


@handwritten(
    target="redis-injected-client",
    module=REDIS,
    qualname="RedisSession.add_items",
    defect="the expiry misses the messages: after each append the messages list is made "
    "persistent again (only the metadata keys expire), so the history outlives its ttl",
)
def redis_ttl_spares_the_messages() -> None:
    cls = load_class(REDIS, "RedisSession")
    original = cls.add_items

    async def add_items(self: Any, items: list[Any]) -> None:
        await original(self, items)
        await self._redis.persist(self._messages_key)

    cls.add_items = add_items
