"""A saver on a store of the trial's own, for a check that needs several fresh stores in one
trial (ARIB-CKPT-012, -013): each is disposed of when the check is done with it, before the
next one opens. On a pipelined PostgreSQL lane, a saver that has read holds its implicit
transaction open until its next sync, and a second instance's setup() (CREATE INDEX
CONCURRENTLY) waits for every open transaction of the database: kept open, the first store
would stall the second's build."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from arib.checks.base import TrialContext
from arib.checks.langgraph._saver import saver_of


@asynccontextmanager
async def fresh_saver(ctx: TrialContext, name: str) -> AsyncIterator[Any]:
    """A saver on the store ``<trial root>/<name>`` (made empty for it), no call made on it
    yet; disposed of on exit (the trial's own dispose closes it again, harmlessly)."""
    root = ctx.build.root / name
    root.mkdir(parents=True, exist_ok=True)
    ctx.log(f"open a fresh store ({name})")
    handle = await ctx.open_with(root=root)
    try:
        yield saver_of(handle)
    finally:
        await handle.dispose()
