"""arib.checks._suspend: a call's own suspensions are counted, and a cancellation sent at the k-th
lands exactly there."""

from __future__ import annotations

import asyncio

import pytest

from arib.checks._suspend import at_suspension, cancel_current


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
