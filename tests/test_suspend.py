"""arib.checks._suspend: a call's own suspensions are counted, and a cancellation sent at the k-th
lands exactly there."""

from __future__ import annotations

import asyncio
import sys
import types

import pytest

from arib.checks import _suspend as suspend
from arib.checks._suspend import (
    at_suspension,
    busy_clocks_loaded,
    busy_yields_pinned,
    cancel_current,
)


async def three_steps(done: list[int]) -> str:
    for step in range(1, 4):
        await asyncio.sleep(0)
        done.append(step)
    return "end"


def test_counts_the_suspensions_of_an_uninterrupted_call() -> None:
    seen: list[int] = [0]
    done: list[int] = []

    async def main() -> str:
        return await at_suspension(three_steps(done), 0, lambda: None, seen)

    result = asyncio.run(main())
    assert (result, seen, done) == ("end", [3], [1, 2, 3])


@pytest.mark.parametrize("k", [1, 2, 3])
def test_a_cancellation_at_k_lands_at_the_kth_await(k: int) -> None:
    seen: list[int] = [0]
    done: list[int] = []

    async def main() -> bool:
        async def call() -> str:
            return await at_suspension(three_steps(done), k, cancel_current, seen)

        task = asyncio.ensure_future(call())
        await asyncio.wait({task})
        return task.cancelled()

    assert asyncio.run(main()) is True
    assert done == list(range(1, k)) and seen == [k]


def test_busy_clocks_are_pinned_in_the_block_and_restored_after(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clock = types.ModuleType("arib_test_busy_clock")
    clock.MAX_BUSY = 0.005  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, clock.__name__, clock)
    monkeypatch.setattr(suspend, "BUSY_CLOCKS", (
        (clock.__name__, "MAX_BUSY", 0.0), ("arib_test_not_imported", "MAX_BUSY", 0.0)))
    assert busy_clocks_loaded() == ("arib_test_busy_clock.MAX_BUSY",)
    with busy_yields_pinned() as pinned:
        assert pinned == ("arib_test_busy_clock.MAX_BUSY=0.0",)
        assert clock.MAX_BUSY == 0.0  # type: ignore[attr-defined]
    assert clock.MAX_BUSY == 0.005  # type: ignore[attr-defined]
    with pytest.raises(RuntimeError), busy_yields_pinned():
        raise RuntimeError("a call that fails inside")
    assert clock.MAX_BUSY == 0.005  # type: ignore[attr-defined]
    assert "arib_test_not_imported" not in sys.modules  # never imported to be pinned
