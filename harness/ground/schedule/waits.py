"""What a suspended actor waits for, read from where its coroutine stack stopped.

An actor that awaits a lock, an event or a queue (asyncio's or anyio's) is released by another
actor's step: the scheduler need not wait for it before deciding. Anything else (a worker
thread's result, a socket's reply, an unknown future) comes from outside the actors: the
scheduler waits for it, up to its settle time, before deciding, and a decision taken while one
is still outstanding is uncontrolled. A timer is outside too, unless the actor sleeps through
the scheduler's virtual clock.
"""

from __future__ import annotations

import enum
import types
from typing import Any


class Wait(enum.Enum):
    """The kind of a suspended actor's wait."""

    NONE = "none"  # a bare yield (sleep(0), a checkpoint): ready at once
    INTERNAL = "internal"  # a lock, event, queue: another actor's step releases it
    EXTERNAL = "external"  # a thread, a socket, a server, an unknown future
    TIMER = "timer"  # a real-time sleep


# (a path suffix of the code's file, its qualified name or "*") -> the wait, first match wins,
# innermost frame first. (Python 3.10's code objects have no qualified name: its bare name.)
_RULES: tuple[tuple[str, str, Wait | None], ...] = (
    ("asyncio/futures.py", "*", None),  # the pure-Python Future.__await__: look further out
    ("asyncio/tasks.py", "sleep", Wait.TIMER),
    ("asyncio/locks.py", "*", Wait.INTERNAL),
    ("asyncio/queues.py", "*", Wait.INTERNAL),
    ("anyio/_core/_synchronization.py", "*", Wait.INTERNAL),
    ("anyio/streams/memory.py", "*", Wait.INTERNAL),
    ("anyio/_backends/_asyncio.py", "Lock.acquire", Wait.INTERNAL),
    ("anyio/_backends/_asyncio.py", "Semaphore.acquire", Wait.INTERNAL),
    ("anyio/_backends/_asyncio.py", "CapacityLimiter.acquire_on_behalf_of", Wait.INTERNAL),
    ("anyio/_backends/_asyncio.py", "Event.wait", Wait.INTERNAL),
    ("anyio/_backends/_asyncio.py", "AsyncIOBackend.sleep", Wait.TIMER),
)
_CACHE: dict[types.CodeType, Wait | None] = {}


def _rule(code: types.CodeType) -> Wait | None:
    if code not in _CACHE:
        path = code.co_filename.replace("\\", "/")
        name = getattr(code, "co_qualname", code.co_name)
        _CACHE[code] = next((wait for suffix, rule, wait in _RULES
                             if path.endswith(suffix) and _matches(rule, name)), None)
    return _CACHE[code]


def _matches(rule: str, name: str) -> bool:
    if rule == "*":
        return True
    if "." not in name and code_has_no_qualname():
        return rule.rpartition(".")[2] == name
    return rule == name


def code_has_no_qualname() -> bool:
    """Python 3.10: code objects carry no qualified name."""
    return not hasattr(_matches.__code__, "co_qualname")


def frames(coro: Any) -> list[types.FrameType]:
    """The frames of a suspended coroutine's await chain, outermost first."""
    out: list[types.FrameType] = []
    obj = coro
    for _ in range(200):  # a chain deeper than this is not followed further
        frame = (getattr(obj, "cr_frame", None) or getattr(obj, "gi_frame", None)
                 or getattr(obj, "ag_frame", None))
        if frame is not None:
            out.append(frame)
        nxt = (getattr(obj, "cr_await", None) or getattr(obj, "gi_yieldfrom", None)
               or getattr(obj, "ag_await", None))
        if nxt is None:
            break
        obj = nxt
    return out


def classify(coro: Any) -> Wait:
    """What the suspended ``coro`` waits for: the rule of its innermost known frame; EXTERNAL
    when no frame matches (an unknown wait is waited for, never assumed internal)."""
    for frame in reversed(frames(coro)):
        wait = _rule(frame.f_code)
        if wait is not None:
            return wait
    return Wait.EXTERNAL
