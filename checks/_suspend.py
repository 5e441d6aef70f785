"""Act on a call at one of its own suspensions (ARIB-CANCEL-001, ARIB-RELEASE-001,
ARIB-LGRUN-001 and the parity fault workflows).

A fault "at the k-th suspension" is counted in the call's own awaits, not in wall-clock time:
the coroutine is driven like ``yield from``, and just before it yields for the k-th time the
action runs while its task is current, so ``cancel_current()`` there lands the CancelledError
exactly at that await, whatever the backend's worker threads are doing. ``held_at`` holds the
call instead: what it awaited at its k-th suspension has completed, and the call does not go
on until released, as a call that is slow at that point (a slow consumer, a loaded machine);
meanwhile every other task runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import types
from collections.abc import Awaitable, Callable, Generator, Iterator
from typing import Any

# Client libraries whose calls yield to the event loop by the wall clock: psycopg's wait_async
# finishes a step that needed no I/O without suspending, unless the loop has gone
# MAX_BUSY_TIME seconds without a yield, then it sleeps(0) first. So how many suspensions a
# call makes, and where, depends on the machine's load: on a loaded machine a cancellation
# counted in suspensions lands at points an idle one never has (one of them, in
# AsyncPipeline's entry, leaves the connection in pipeline mode). Pinned to 0, every such
# step yields, as it does when the machine is loaded, on every machine.
BUSY_CLOCKS: tuple[tuple[str, str, float], ...] = (("psycopg.waiting", "MAX_BUSY_TIME", 0.0),)


@types.coroutine
def _driven(awaitable: Awaitable[Any], k: int, seen: list[int],
            before: Callable[[], None] | None = None,
            after: Callable[[], Awaitable[None]] | None = None) -> Generator[Any, Any, Any]:
    """Drive ``awaitable`` like ``yield from``, counting its suspensions in ``seen[0]``; at
    the k-th, run ``before()`` just before it suspends, and await ``after()`` once what it
    awaited there completed, before it resumes."""
    gen = awaitable.__await__()
    send: Any = None
    throw: BaseException | None = None
    while True:
        try:
            yielded = gen.send(send) if throw is None else gen.throw(throw)
        except StopIteration as stop:
            return stop.value
        seen[0] += 1
        if seen[0] == k and before is not None:
            before()
        send, throw = None, None
        try:
            send = yield yielded
        except BaseException as exc:  # noqa: BLE001 - passed on to the wrapped coroutine
            throw = exc
        if seen[0] == k and throw is None and after is not None:
            yield from after().__await__()  # type: ignore[attr-defined]


def at_suspension(
    awaitable: Awaitable[Any], k: int, action: Callable[[], None], seen: list[int]
) -> Awaitable[Any]:
    """Drive ``awaitable`` like ``yield from``; run ``action`` just before its k-th
    suspension (k = 0: never). ``seen[0]`` counts the suspensions."""
    return _driven(awaitable, k, seen, before=action)  # type: ignore[no-any-return]


def cancel_current() -> None:
    """Cancel the running task; called by ``at_suspension`` the CancelledError lands at the
    suspension it is about to make (the task cancels the future it then waits on)."""
    task = asyncio.current_task()
    assert task is not None
    task.cancel()


def held_at(
    awaitable: Awaitable[Any], k: int, hold: Callable[[], Awaitable[None]], seen: list[int]
) -> Awaitable[Any]:
    """Drive ``awaitable`` like ``yield from``; when what it awaited at its k-th suspension
    completed (k = 0: never), await ``hold()`` before it resumes. ``seen[0]`` counts the
    suspensions (the held one once)."""
    return _driven(awaitable, k, seen, after=hold)  # type: ignore[no-any-return]


@contextlib.contextmanager
def busy_yields_pinned() -> Iterator[tuple[str, ...]]:
    """Within the block, each imported library of BUSY_CLOCKS yields to the loop after every
    step, as when the loop has been busy too long: a call's suspensions are the same on an
    idle and a loaded machine. Yields what was pinned (``psycopg.waiting.MAX_BUSY_TIME=0.0``)."""
    pinned: list[tuple[Any, str, Any]] = []
    for module, name, value in BUSY_CLOCKS:
        loaded = sys.modules.get(module)
        if loaded is None or not hasattr(loaded, name):
            continue
        pinned.append((loaded, name, getattr(loaded, name)))
        setattr(loaded, name, value)
    try:
        yield tuple(f"{m.__name__}.{name}={getattr(m, name)!r}" for m, name, _ in pinned)
    finally:
        for loaded, name, old in reversed(pinned):
            setattr(loaded, name, old)


def busy_clocks_loaded() -> tuple[str, ...]:
    """The BUSY_CLOCKS of the libraries this process has imported: what ``busy_yields_pinned``
    pins (``psycopg.waiting.MAX_BUSY_TIME``), for a trial's log."""
    return tuple(f"{module}.{name}" for module, name, _ in BUSY_CLOCKS
                 if hasattr(sys.modules.get(module), name))
