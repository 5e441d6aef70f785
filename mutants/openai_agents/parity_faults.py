"""The gate's mutants for the fault workflows: one per workflow, each a defect of one lane.

Each mutant makes one lane come out of one fault differently from the reference lane, on a
lane that comes out of it like the reference when clean (so the gate's verdict changes because
of the mutant, not because of a divergence the SDK already has). Where no SDK lane agrees with
the reference (a cancelled write is kept by every local SDK backend; a redelivered item is
stored twice by every SDK backend), the mutant is of the reference backend under uvloop only:
``reference@uvloop`` is compared with ``reference@asyncio`` like any other lane. The overrides
are our own code; they use only what the backend class shows (its public methods, and the
closed flag every SQLite backend of this SDK keeps).
"""

from __future__ import annotations

import asyncio
import sqlite3
from typing import Any

from arib.mutants.base import MutantSpec
from arib.mutants.parity import backend, generated, handwritten
from arib.targets.openai_agents.sdk import (
    ADVANCED_SQLITE_MODULE,
    ASYNC_SQLITE_MODULE,
    SQLITE_MODULE,
)

REFERENCE_MODULE = "arib.targets.openai_agents.reference"
ENCRYPT_MODULE = "agents.extensions.memory.encrypt_session"
WRITE_BEHIND_S = 5.0


def _reference_shields_cancelled_write() -> None:
    cls = backend(REFERENCE_MODULE, "ReferenceSession")
    original = cls.add_items

    async def add_items(self: Any, items: list[Any]) -> None:
        await asyncio.shield(asyncio.ensure_future(original(self, items)))

    cls.add_items = add_items


def _reference_without_idempotency() -> None:
    cls = backend(REFERENCE_MODULE, "ReferenceSession")
    cls._key = staticmethod(lambda item: None)


def _sqlite_drops_write_closed_meanwhile() -> None:
    cls = backend(SQLITE_MODULE, "SQLiteSession")
    original = cls.add_items

    async def add_items(self: Any, items: list[Any]) -> None:
        await asyncio.sleep(0)
        if self._closed:
            return  # closed while this write waited: dropped without a word
        await original(self, items)

    cls.add_items = add_items


def _advanced_pop_after_close_returns_none() -> None:
    cls = backend(ADVANCED_SQLITE_MODULE, "AdvancedSQLiteSession")
    original = cls.pop_item

    async def pop_item(self: Any) -> Any:
        if self._closed:
            return None
        return await original(self)

    cls.pop_item = pop_item


def _async_sqlite_second_close_raises() -> None:
    cls = backend(ASYNC_SQLITE_MODULE, "AsyncSQLiteSession")
    original = cls.close

    async def close(self: Any) -> None:
        calls = self.__dict__.setdefault("_parity_closes", [0])
        calls[0] += 1
        if calls[0] > 1:
            raise RuntimeError("close() called again")
        await original(self)

    cls.close = close


def _sqlite_write_behind() -> None:
    cls = backend(SQLITE_MODULE, "SQLiteSession")
    original = cls.add_items

    async def add_items(self: Any, items: list[Any]) -> None:
        loop = asyncio.get_running_loop()
        loop.call_later(WRITE_BEHIND_S, lambda: loop.create_task(original(self, items)))

    cls.add_items = add_items


def _memory_append_lost_when_busy() -> None:
    cls = backend(SQLITE_MODULE, "SQLiteSession")
    original = cls.add_items

    async def add_items(self: Any, items: list[Any]) -> None:
        busy = self.__dict__.setdefault("_parity_busy", [0])
        if busy[0]:
            return  # another append is in flight: this one is lost
        busy[0] += 1
        try:
            await original(self, items)
        finally:
            busy[0] -= 1

    cls.add_items = add_items


def _async_sqlite_batch_item_by_item() -> None:
    cls = backend(ASYNC_SQLITE_MODULE, "AsyncSQLiteSession")
    original = cls.add_items

    async def add_items(self: Any, items: list[Any]) -> None:
        for item in items:
            await original(self, [item])
            await asyncio.sleep(0)

    cls.add_items = add_items


def _advanced_clear_keeps_newest() -> None:
    cls = backend(ADVANCED_SQLITE_MODULE, "AdvancedSQLiteSession")
    original = cls.clear_session

    async def clear_session(self: Any) -> None:
        newest = await self.get_items(limit=1)
        await original(self)
        if newest:
            await self.add_items(newest)

    cls.clear_session = clear_session


def _encrypted_pop_reads_then_removes() -> None:
    cls = backend(ENCRYPT_MODULE, "EncryptedSession")
    original = cls.pop_item

    async def pop_item(self: Any) -> Any:
        newest = await self.get_items(limit=1)
        await asyncio.sleep(0)
        await original(self)
        return newest[0] if newest else None

    cls.pop_item = pop_item


def _sqlite_limit_reads_oldest() -> None:
    cls = backend(SQLITE_MODULE, "SQLiteSession")
    original = cls.get_items

    async def get_items(self: Any, limit: int | None = None) -> list[Any]:
        if limit is not None and limit > 0:
            return list(await original(self))[:limit]
        return list(await original(self, limit))

    cls.get_items = get_items


def _sqlite_drops_appends_while_shared() -> None:
    cls = backend(SQLITE_MODULE, "SQLiteSession")
    original = cls.add_items

    async def add_items(self: Any, items: list[Any]) -> None:
        if type(self)._file_lock_counts.get(self._lock_path, 0) > 1:
            return  # another instance holds the file: the write is skipped silently
        await original(self, items)

    cls.add_items = add_items


def _async_sqlite_cancelled_read_poisons() -> None:
    cls = backend(ASYNC_SQLITE_MODULE, "AsyncSQLiteSession")
    original = cls.get_items

    async def get_items(self: Any, limit: int | None = None) -> list[Any]:
        if self.__dict__.get("_parity_poisoned"):
            raise RuntimeError("an earlier read was cancelled: this session is unusable")
        try:
            return list(await original(self, limit))
        except asyncio.CancelledError:
            self.__dict__["_parity_poisoned"] = True
            raise

    cls.get_items = get_items


def _async_sqlite_open_error_masked() -> None:
    cls = backend(ASYNC_SQLITE_MODULE, "AsyncSQLiteSession")
    original = cls.get_items

    async def get_items(self: Any, limit: int | None = None) -> list[Any]:
        try:
            return list(await original(self, limit))
        except sqlite3.Error as exc:
            raise RuntimeError("the session could not read its history") from exc

    cls.get_items = get_items


def _async_sqlite_close_swallows_cancel() -> None:
    cls = backend(ASYNC_SQLITE_MODULE, "AsyncSQLiteSession")
    original = cls.close

    async def close(self: Any) -> None:
        try:
            await original(self)
        except asyncio.CancelledError:
            return  # the caller's cancellation is swallowed: close() returns

    cls.close = close


def _advanced_tables_refused_by_driver_error() -> None:
    cls = backend(ADVANCED_SQLITE_MODULE, "AdvancedSQLiteSession")
    original = cls.__init__

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        try:
            original(self, *args, **kwargs)
        except ValueError as exc:
            raise sqlite3.OperationalError(str(exc)) from exc

    cls.__init__ = __init__


PARITY_MUTANTS: tuple[MutantSpec, ...] = (
    handwritten(
        "parity_reference_keeps_cancelled_write",
        "reference",
        REFERENCE_MODULE,
        "ReferenceSession.add_items",
        "a cancelled add_items is shielded and committed anyway (what the SDK's SQLite "
        "backends do), under uvloop only",
        _reference_shields_cancelled_write,
        loop="uvloop",
        workflow="fault_cancelled_write",
    ),
    handwritten(
        "parity_reference_stores_redelivery",
        "reference",
        REFERENCE_MODULE,
        "ReferenceSession._key",
        "the idempotency rule dropped: a redelivered item with an id is stored again, under "
        "uvloop only",
        _reference_without_idempotency,
        loop="uvloop",
        workflow="fault_redelivery",
    ),
    handwritten(
        "parity_sqlite_drops_write_raced_by_close",
        "sqlite-file",
        SQLITE_MODULE,
        "SQLiteSession.add_items",
        "a write that waits while close() runs returns without writing and without raising",
        _sqlite_drops_write_closed_meanwhile,
        workflow="fault_close_races_write",
    ),
    handwritten(
        "parity_advanced_pop_after_close_returns_none",
        "advanced-sqlite-file",
        ADVANCED_SQLITE_MODULE,
        "AdvancedSQLiteSession.pop_item",
        "pop_item on a closed session returns None instead of refusing",
        _advanced_pop_after_close_returns_none,
        workflow="fault_writes_after_close",
    ),
    handwritten(
        "parity_async_sqlite_second_close_raises",
        "async-sqlite-file",
        ASYNC_SQLITE_MODULE,
        "AsyncSQLiteSession.close",
        "close() is not idempotent: every call after the first raises",
        _async_sqlite_second_close_raises,
        workflow="fault_concurrent_close",
    ),
    handwritten(
        "parity_sqlite_write_behind",
        "sqlite-file",
        SQLITE_MODULE,
        "SQLiteSession.add_items",
        "write-behind: add_items returns at once and writes seconds later, so a killed "
        "writer loses appends it acknowledged",
        _sqlite_write_behind,
        workflow="fault_writer_killed",
    ),
    handwritten(
        "parity_memory_append_lost_when_busy",
        "sqlite-memory",
        SQLITE_MODULE,
        "SQLiteSession.add_items",
        "an append that arrives while another is in flight is silently lost",
        _memory_append_lost_when_busy,
        workflow="fault_concurrent_appends",
    ),
    handwritten(
        "parity_async_sqlite_batch_item_by_item",
        "async-sqlite-file",
        ASYNC_SQLITE_MODULE,
        "AsyncSQLiteSession.add_items",
        "a batch is written item by item with a suspension between, so concurrent batches "
        "interleave",
        _async_sqlite_batch_item_by_item,
        workflow="fault_concurrent_batches",
    ),
    handwritten(
        "parity_advanced_clear_keeps_newest",
        "advanced-sqlite-file",
        ADVANCED_SQLITE_MODULE,
        "AdvancedSQLiteSession.clear_session",
        "clear_session puts the newest item back, so a clear racing writers leaves a torn "
        "batch or a seed item",
        _advanced_clear_keeps_newest,
        workflow="fault_clear_races_writers",
    ),
    handwritten(
        "parity_encrypted_pop_reads_then_removes",
        "encrypted-sqlite",
        ENCRYPT_MODULE,
        "EncryptedSession.pop_item",
        "pop_item reads the newest item and removes one in a later step, so concurrent pops "
        "return the same item",
        _encrypted_pop_reads_then_removes,
        workflow="fault_concurrent_pops",
    ),
    handwritten(
        "parity_sqlite_limit_reads_oldest",
        "sqlite-file",
        SQLITE_MODULE,
        "SQLiteSession.get_items",
        "get_items(limit=k) returns the oldest k items",
        _sqlite_limit_reads_oldest,
        workflow="fault_limit_reads_race_appends",
    ),
    generated(
        "parity_sqlite_clear_ignores_session_id",
        "sqlite-file",
        SQLITE_MODULE,
        "SQLiteSession.clear_session",
        "generated WHERE widening: clear_session deletes the items of every session in the "
        "store",
        'f"DELETE FROM {self.messages_table} WHERE session_id = ?",',
        'f"DELETE FROM {self.messages_table} WHERE session_id = ? OR 1",',
        workflow="fault_peer_sessions",
    ),
    handwritten(
        "parity_sqlite_drops_appends_while_shared",
        "sqlite-file",
        SQLITE_MODULE,
        "SQLiteSession.add_items",
        "while a second instance of the same file is open in the process, appends are "
        "skipped silently",
        _sqlite_drops_appends_while_shared,
        workflow="fault_instances_on_one_store",
    ),
    handwritten(
        "parity_async_sqlite_cancelled_read_poisons",
        "async-sqlite-file",
        ASYNC_SQLITE_MODULE,
        "AsyncSQLiteSession.get_items",
        "a cancelled get_items leaves the session unusable: every later read raises",
        _async_sqlite_cancelled_read_poisons,
        workflow="fault_cancelled_first_call",
    ),
    handwritten(
        "parity_async_sqlite_open_error_masked",
        "async-sqlite-file",
        ASYNC_SQLITE_MODULE,
        "AsyncSQLiteSession.get_items",
        "a store that cannot be opened is reported as a RuntimeError of the session's own "
        "code instead of the driver's error",
        _async_sqlite_open_error_masked,
        workflow="fault_failed_open",
    ),
    handwritten(
        "parity_async_sqlite_close_swallows_cancel",
        "async-sqlite-file",
        ASYNC_SQLITE_MODULE,
        "AsyncSQLiteSession.close",
        "a close() cancelled at a suspension returns instead of ending cancelled",
        _async_sqlite_close_swallows_cancel,
        workflow="fault_cancelled_close",
    ),
    handwritten(
        "parity_advanced_tables_refused_by_driver_error",
        "advanced-sqlite-file",
        ADVANCED_SQLITE_MODULE,
        "AdvancedSQLiteSession.__init__",
        "an instance configured for tables the store does not hold is refused with "
        "sqlite3.OperationalError instead of the documented ValueError",
        _advanced_tables_refused_by_driver_error,
        workflow="fault_misconfigured_tables",
    ),
)
