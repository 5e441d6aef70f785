"""Shared by the oas-redis--*.py reproductions: RedisSession of openai-agents-session 0.1.0, used
as its README shows (an async redis-py client), on a throwaway redis-server that arib's
ServiceManager starts and stops."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any

from arib.ground.services import ServiceManager


def on_redis(scenario: Callable[[str], Coroutine[Any, Any, bool]]) -> bool:
    """Run ``scenario(url)`` against a fresh redis-server; what it returned."""
    with ServiceManager(environ={}) as manager:
        return asyncio.run(scenario(manager.start("redis").url))


def texts(items: list[object]) -> list[object]:
    """The contents of session items, for printing."""
    return [item.get("content") if isinstance(item, dict) else item for item in items]
