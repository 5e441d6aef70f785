"""Shared by the <lane>-async--*.py reproductions: each async saver built inside a running event
loop, as an async graph (``ainvoke``) has it, handed to the script's scenario and closed after.

AsyncLMDBSaver (langgraph-checkpoint-lmdb 0.3.1) takes ``asyncio.get_event_loop()`` in its
``__init__`` and hands every call to that loop's executor, so it is built in the loop that awaits
it; AsyncRedisSaver (langgraph-checkpoint-plainredis 0.1.0) gets a throwaway redis-server that
arib's ServiceManager starts and stops. Each package is imported only by its own helper: a lane's
environment has only its package.
"""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Callable, Coroutine
from typing import Any

Scenario = Callable[[Any], Coroutine[Any, Any, bool]]


def on_async_lmdb(scenario: Scenario) -> bool:
    """Run ``scenario(saver)`` on an AsyncLMDBSaver over a fresh LMDB environment (the package's
    quick start: ``lmdb.open(path, max_dbs=10)``); what it returned."""
    import lmdb
    from langgraph_checkpoint_lmdb import AsyncLMDBSaver

    async def go() -> bool:
        env = lmdb.open(tempfile.mkdtemp(), max_dbs=10)
        saver = AsyncLMDBSaver(env)
        try:
            return await scenario(saver)
        finally:
            saver.executor.shutdown(wait=True)
            env.close()

    return asyncio.run(go())


def on_async_redis(scenario: Scenario) -> bool:
    """Run ``scenario(saver)`` on an AsyncRedisSaver of a fresh redis-server; what it
    returned."""
    from langgraph_checkpoint_plainredis import AsyncRedisSaver

    from arib.ground.services import ServiceManager

    with ServiceManager(environ={}) as manager:
        url = manager.start("redis").url

        async def go() -> bool:
            saver = AsyncRedisSaver(url=url)
            try:
                return await scenario(saver)
            finally:
                await saver.aclose()

        return asyncio.run(go())
