"""Hand-written mutants of the LangGraph stores for ARIB-LGSTORE-009 (a cancelled abatch). Our
own code installed over a method, never SDK code."""

from __future__ import annotations

import asyncio
from typing import Any

from arib.mutants.base import handwritten, load_class
from arib.targets.langgraph.stores import MEMORY_STORE_MODULE, REFERENCE_STORE_MODULE


def _op_by_op(self: Any, ops: Any) -> Any:
    """An abatch that runs each op as a batch of its own, yielding to the loop between them."""

    async def run() -> list[Any]:
        results = []
        for op in ops:
            results.extend(self.batch([op]))
            await asyncio.sleep(0)
        return results

    return run()


@handwritten(target="lg-store-reference", module=REFERENCE_STORE_MODULE,
             qualname="ReferenceStore.abatch",
             defect="abatch runs each op as a batch of its own and yields to the loop between "
                    "them: a cancellation lands between two ops of one batch")
def lg_store_reference_abatch_yields_between_ops() -> None:
    load_class(REFERENCE_STORE_MODULE, "ReferenceStore").abatch = _op_by_op


@handwritten(target="lg-store-memory", module=MEMORY_STORE_MODULE,
             qualname="InMemoryStore.abatch",
             defect="abatch applies its ops one at a time and yields to the loop between them")
def lg_store_memory_abatch_yields_between_puts() -> None:
    load_class(MEMORY_STORE_MODULE, "InMemoryStore").abatch = _op_by_op
