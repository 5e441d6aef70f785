"""Hand-written mutants that only a cancellation shows (ARIB-LGCANCEL-001): put_writes stored
in two commits with a suspension between them. Uncancelled, every write is stored once (the
second commit re-sends all of them; the first half is ignored as already there). Our own
code, installed over a saver's method."""

from __future__ import annotations

import asyncio
from typing import Any

from arib.mutants.base import handwritten, load_class

REFERENCE = "arib.targets.langgraph.reference"
ASYNC_SQLITE = "langgraph.checkpoint.sqlite.aio"


@handwritten(target="lg-reference", module=REFERENCE, qualname="ReferenceSaver.aput_writes",
             defect="aput_writes commits the first half of the writes, suspends, then commits "
                    "the rest: cancelled in between, half the writes stay")
def lg_reference_cancel_half_writes() -> None:
    cls = load_class(REFERENCE, "ReferenceSaver")

    async def aput_writes(self: Any, config: Any, writes: Any, task_id: str,
                          task_path: str = "") -> None:
        self.put_writes(config, list(writes)[: len(writes) // 2 or 1], task_id, task_path)
        await asyncio.sleep(0)
        self.put_writes(config, writes, task_id, task_path)

    cls.aput_writes = aput_writes


@handwritten(target="lg-async-sqlite-memory", module=ASYNC_SQLITE,
             qualname="AsyncSqliteSaver.aput_writes",
             defect="aput_writes commits the first half of the writes, then the rest in a "
                    "second transaction: cancelled in between, half the writes stay")
def lg_async_sqlite_cancel_half_writes() -> None:
    cls = load_class(ASYNC_SQLITE, "AsyncSqliteSaver")
    original = cls.aput_writes

    async def aput_writes(self: Any, config: Any, writes: Any, task_id: str,
                          task_path: str = "") -> None:
        await original(self, config, list(writes)[: len(writes) // 2 or 1], task_id, task_path)
        await original(self, config, writes, task_id, task_path)

    cls.aput_writes = aput_writes
