"""What a suspended actor waits for, read from where its coroutine stack stopped.

An actor that awaits a lock, an event or a queue (asyncio's or anyio's) is released by another
actor's step: the scheduler need not wait for it before deciding. Anything else (a worker
thread's result, a socket's reply, an unknown future) comes from outside the actors: the
scheduler waits for it, up to its settle time, before deciding, and a decision taken while one
is still outstanding is uncontrolled. A timer is outside too, unless the actor sleeps through
the scheduler's virtual clock.
"""

from __future__ import annotations

import concurrent.futures
import enum
import gc
import types
from collections.abc import Callable
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
# Keyed by the code object's id, the entry holding the code object itself (so that its id is
# not reused while cached): a code object hashes its bytecode, constants and names on every
# lookup, and this runs at every suspension of every actor.
_CACHE: dict[int, tuple[types.CodeType, Wait | None, bool]] = {}


def _known(code: types.CodeType) -> tuple[types.CodeType, Wait | None, bool]:
    """The cached facts of ``code``: itself, its rule, whether it is a task helper of
    asyncio/tasks.py (``_TASK_WAITS``)."""
    found = _CACHE.get(id(code))
    if found is not None and found[0] is code:
        return found
    path = code.co_filename.replace("\\", "/")
    name = getattr(code, "co_qualname", code.co_name)
    wait = next((wait for suffix, rule, wait in _RULES
                 if path.endswith(suffix) and _matches(rule, name)), None)
    task_wait = path.endswith("asyncio/tasks.py") and code.co_name in _TASK_WAITS
    found = _CACHE[id(code)] = (code, wait, task_wait)
    return found


def _matches(rule: str, name: str) -> bool:
    if rule == "*":
        return True
    if "." not in name and code_has_no_qualname():
        return rule.rpartition(".")[2] == name
    return rule == name


def code_has_no_qualname() -> bool:
    """Python 3.10: code objects carry no qualified name."""
    return not hasattr(_matches.__code__, "co_qualname")


# Objects of an await chain that hide what they wait on (``await obj`` where ``obj.__await__``
# returns a coroutine's, an async generator's ``asend``): followed through their referents.
_OPAQUE = ("coroutine_wrapper", "async_generator_asend", "async_generator_athrow")


def _next(obj: Any) -> Any:
    nxt = (getattr(obj, "cr_await", None) or getattr(obj, "gi_yieldfrom", None)
           or getattr(obj, "ag_await", None))
    if nxt is None and type(obj).__name__ in _OPAQUE:
        nxt = next((r for r in gc.get_referents(obj)
                    if hasattr(r, "cr_frame") or hasattr(r, "ag_frame")), None)
    return nxt


def chain(coro: Any) -> list[Any]:
    """The objects of a suspended coroutine's await chain, outermost first (the coroutine,
    the coroutines and generators it awaits, the future at the end)."""
    out = [coro]
    for _ in range(200):  # a chain deeper than this is not followed further
        nxt = _next(out[-1])
        if nxt is None:
            break
        out.append(nxt)
    return out


def frames(coro: Any) -> list[types.FrameType]:
    """The frames of a suspended coroutine's await chain, outermost first."""
    found = (getattr(obj, "cr_frame", None) or getattr(obj, "gi_frame", None)
             or getattr(obj, "ag_frame", None) for obj in chain(coro))
    return [frame for frame in found if frame is not None]


def _chained(future: Any, actor_task: Callable[[Any], bool]) -> bool:
    """Whether ``future`` is chained to what only the actors complete: a concurrent future no
    thread works on (``asyncio.wrap_future`` of one still PENDING, never started by an
    executor: a signal that code of this process sets, e.g. a predecessor's completion), or an
    actor's task (``asyncio.shield`` of it). Read from the closures of its callbacks."""
    for callback, *_ in getattr(future, "_callbacks", None) or ():
        for cell in getattr(callback, "__closure__", None) or ():
            try:
                value = cell.cell_contents
            except ValueError:  # an empty cell
                continue
            if isinstance(value, concurrent.futures.Future):
                return value._state == "PENDING"  # noqa: SLF001 - no public accessor
            if actor_task(value):
                return True
    return False


_TASK_WAITS = ("wait", "_wait", "wait_for", "gather")  # asyncio/tasks.py helpers over tasks


def classify(coro: Any, future: Any = None,
             actor_task: Callable[[Any], bool] = lambda _: False) -> Wait:
    """What the suspended ``coro`` waits for (``future``: what it yielded): another actor's
    task (``actor_task`` says which are) or a signal future is INTERNAL; else the rule of its
    innermost known frame; EXTERNAL when no frame matches (an unknown wait is waited for,
    never assumed internal)."""
    objects = chain(coro)
    awaited = list(getattr(future, "_children", ()) or ()) or [future]  # a gather's children
    if future is not None and (all(actor_task(t) for t in awaited)
                               or _chained(future, actor_task)):
        return Wait.INTERNAL
    found = (getattr(obj, "cr_frame", None) or getattr(obj, "gi_frame", None)
             or getattr(obj, "ag_frame", None) for obj in objects)
    for frame in reversed([f for f in found if f is not None]):
        _, wait, task_wait = _known(frame.f_code)
        if task_wait:
            tasks = frame.f_locals.get("fs") or frame.f_locals.get("fut")
            group = list(tasks) if isinstance(tasks, (set, list, tuple)) else [tasks]
            return Wait.INTERNAL if group and all(actor_task(t) for t in group) else (
                Wait.EXTERNAL)
        if wait is not None:
            return wait
    return Wait.EXTERNAL


def sleep_frame(coro: Any) -> types.FrameType | None:
    """The frame of the ``asyncio.sleep`` a suspended coroutine waits in, if it does."""
    for frame in reversed(frames(coro)):
        if frame.f_code.co_name == "sleep" and frame.f_code.co_filename.replace(
                "\\", "/").endswith("asyncio/tasks.py"):
            return frame
    return None


def timer_delay(coro: Any) -> float | None:
    """The delay of the ``asyncio.sleep`` a suspended coroutine waits in, if it does."""
    frame = sleep_frame(coro)
    delay = frame.f_locals.get("delay") if frame is not None else None
    return float(delay) if isinstance(delay, (int, float)) else None


def take_timer(coro: Any) -> bool:
    """Cancel the loop timer of the ``asyncio.sleep`` ``coro`` waits in (its handle ``h``),
    so that the scheduler's virtual clock wakes it instead; whether there was one."""
    frame = sleep_frame(coro)
    handle = frame.f_locals.get("h") if frame is not None else None
    if handle is None or not callable(getattr(handle, "cancel", None)):
        return False
    handle.cancel()
    return True
