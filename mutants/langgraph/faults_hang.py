"""Hand-written mutants that only concurrent calls show as calls that never return
(ARIB-LGHANG-001): a second lock (say, for a read cache) that reads take before the saver's
lock and writes take after it, a lock-order inversion. One read and one write at once hold one
lock each and wait for the other's forever. Our own code, installed over a saver in the child
process: the saver's lock is wrapped so that a write takes the second lock once it holds the
saver's, and the reads take the second lock first."""

from __future__ import annotations

import asyncio
import contextvars
import threading
import time
from typing import Any

from arib.mutants.base import handwritten, load_class

REFERENCE = "arib.targets.langgraph.reference"
ASYNC_SQLITE = "langgraph.checkpoint.sqlite.aio"
_READING: contextvars.ContextVar[bool] = contextvars.ContextVar("arib_reading", default=False)


class _ThenSecond:
    """A threading lock that, outside a read, also takes ``second`` once it holds ``real``."""

    def __init__(self, real: Any, second: threading.Lock) -> None:
        self.real, self.second = real, second
        self.local = threading.local()

    def __enter__(self) -> _ThenSecond:
        self.real.acquire()
        self.local.both = not _READING.get()
        if self.local.both:
            time.sleep(0)  # let another thread run between the two acquisitions
            self.second.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.local.both:
            self.second.release()
        self.real.release()


class _AsyncThenSecond:
    """An asyncio lock that, outside a read, also takes ``second`` once it holds ``real``."""

    def __init__(self, real: asyncio.Lock, second: asyncio.Lock) -> None:
        self.real, self.second = real, second
        self.both: list[bool] = []

    async def __aenter__(self) -> _AsyncThenSecond:
        await self.real.acquire()
        both = not _READING.get()
        self.both.append(both)
        if both:
            await asyncio.sleep(0)  # let another task run between the two acquisitions
            await self.second.acquire()
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self.both.pop():
            self.second.release()
        self.real.release()


@handwritten(target="lg-reference", module=REFERENCE, qualname="ReferenceSaver.get_tuple",
             defect="reads take a cache lock before the saver's lock, puts and writes take it "
                    "after: a read and a write from two threads at once deadlock")
def lg_reference_read_lock_inversion() -> None:
    cls = load_class(REFERENCE, "ReferenceSaver")
    init, get_tuple, list_ = cls.__init__, cls.get_tuple, cls.list

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        self._cache_lock = threading.Lock()
        self._lock = _ThenSecond(self._lock, self._cache_lock)

    def read(original: Any) -> Any:
        def reading(self: Any, *args: Any, **kwargs: Any) -> Any:
            token = _READING.set(True)
            try:
                with self._cache_lock:
                    time.sleep(0)  # another thread may take the saver's lock meanwhile
                    return list(original(self, *args, **kwargs)) if original is list_ \
                        else original(self, *args, **kwargs)
            finally:
                _READING.reset(token)
        return reading

    cls.__init__, cls.get_tuple = __init__, read(get_tuple)
    listing = read(list_)

    def list_items(self: Any, *args: Any, **kwargs: Any) -> Any:
        yield from listing(self, *args, **kwargs)

    cls.list = list_items


@handwritten(target="lg-async-sqlite-file", module=ASYNC_SQLITE,
             qualname="AsyncSqliteSaver.aget_tuple",
             defect="aget_tuple takes a cache lock before the saver's lock, aput and "
                    "aput_writes take it after: a read and a write in two tasks at once "
                    "deadlock")
def lg_async_sqlite_read_lock_inversion() -> None:
    cls = load_class(ASYNC_SQLITE, "AsyncSqliteSaver")
    init, aget_tuple = cls.__init__, cls.aget_tuple

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        self._cache_lock = asyncio.Lock()
        self.lock = _AsyncThenSecond(self.lock, self._cache_lock)

    async def aget_tuple_(self: Any, config: Any) -> Any:
        token = _READING.set(True)
        try:
            async with self._cache_lock:
                await asyncio.sleep(0)  # another task may take the saver's lock meanwhile
                return await aget_tuple(self, config)
        finally:
            _READING.reset(token)

    cls.__init__, cls.aget_tuple = __init__, aget_tuple_
