"""Fault steps on how a session holds its store: its files (ARIB-RELEASE-001), its tables
(ARIB-TABLES-001).

Each step injects the fault its check injects and records outcome classes (see
``arib.checks.parity.faultkit``), exactly those the check's invariant fixes, so two lanes that each
keep the invariant record the same. Its docstring says which check, what is compared and why
the record is free of legitimate nondeterminism. Items are fixed per step.

"Open" is read as ARIB-RELEASE-001 reads it, from the process itself
(``arib.checks.openai_agents.release_001.open_files``); a lane whose instance holds no file under
its store folder while in use (a server, an in-memory database) abstains, found on the running
instance.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, ClassVar

import anyio

from arib.checks.openai_agents.parity.faults import _items, _store
from arib.checks.openai_agents.parity.steps import StepSpec, WorkflowContext
from arib.checks.openai_agents.release_001 import (
    FD_DIR,
    is_store_error,
    open_files,
    settled_open_files,
)
from arib.checks.openai_agents.tables_001 import MISCONFIGURED
from arib.checks.parity.faultkit import (
    OP_TIMEOUT_S,
    Abstain,
    StoreAccess,
    bounded,
    builtin_class,
    interrupt,
    key,
    outcome,
    read,
    spread,
)

TABLE_OPTIONS = ("create_tables", "sessions_table", "messages_table")


def same_items(seen: list[Any], expected: list[Any]) -> bool:
    """Whether ``seen`` holds exactly ``expected``, in its order (canonical JSON)."""
    return [key(i) for i in seen] == [key(i) for i in expected]


def read_class(seen: list[Any] | None, how: str, expected: list[Any]) -> str:
    """A read as a class: ``whole_history`` (exactly ``expected``), ``other_items`` or how it
    ended (``raised:<class>``, ``hung``)."""
    if seen is None:
        return how
    return "whole_history" if same_items(seen, expected) else "other_items"


def after_cancelled_close(seen: list[Any] | None, how: str, expected: list[Any]) -> str:
    """A read after a cancelled close(): ``served_or_refused`` when it returned the whole
    history or raised (the invariant allows either, see ``CancelledClose``), else its class."""
    if seen is None:
        return "served_or_refused" if how.startswith("raised:") else how
    return "served_or_refused" if same_items(seen, expected) else "other_items"


def first_call_class(failure: BaseException | None) -> str:
    """A first call on a store whose folder does not exist, as a class: ``store_error_or_served``
    (the store's own error, or served by a backend that makes the folder), ``hung``, or
    ``wrong_error:<built-in class>`` (an error of the session's own code)."""
    if failure is None or (not isinstance(failure, TimeoutError) and is_store_error(failure)):
        return "store_error_or_served"
    if isinstance(failure, TimeoutError):
        return "hung"
    return f"wrong_error:{builtin_class(failure)}"


def refusal_class(failure: BaseException | None) -> str:
    """How an instance configured for other tables ended: ``refused:ValueError`` (the
    documented refusal, any ValueError), ``served``, or another outcome class."""
    if failure is None:
        return "served"
    if isinstance(failure, ValueError):
        return "refused:ValueError"
    return outcome(failure)


async def _released(store: StoreAccess, session: Any, folder: Path) -> str:
    """One close() and what it left: ``close_<outcome>|released`` or ``...|files_kept``."""
    how = await store.close(session)
    left = await settled_open_files(folder)
    return f"close_{how}|{'files_kept' if left else 'released'}"


async def _seeded(store: StoreAccess, history: list[Any]) -> tuple[Any, Path]:
    """A new store holding ``history``, written and closed by its own instance; Abstain when
    that instance held no file under the store folder open while in use."""
    if not FD_DIR.is_dir():
        raise Abstain(f"this system has no {str(FD_DIR)!r} to read open files from")
    handle = await store.new_store()
    folder = store.root_of(handle)
    await handle.session.add_items(list(history))
    await handle.session.get_items()
    if not open_files(folder):
        raise Abstain(
            f"{type(handle.session).__name__} of lane target {store.target.name!r} holds no "
            f"file under its store folder open while in use (read from {str(FD_DIR)!r}): its "
            "store is not a file of this process"
        )
    await store.close(handle.session)
    return handle, folder


async def _swept(
    store: StoreAccess,
    points: list[int],
    fresh: Callable[[], Awaitable[tuple[Any, Path]]],
    call: Callable[[Any], Callable[[], Awaitable[Any]]],
    view: Callable[[list[Any] | None, str], str],
) -> list[str]:
    """For each suspension k in ``points``, on a fresh instance: ``call(session)`` cancelled
    at its k-th suspension, the next read as ``view`` classes it, close() and the files left;
    the sorted set of ``<call>|<read>|close_<outcome>|<files>`` (``hung`` for a call that did
    not end)."""
    classes: set[str] = set()
    for k in points:
        session, folder = await fresh()
        done = await interrupt(call(session), k)
        if done.outcome == "hung":
            classes.add("hung")
            continue
        seen = view(*await read(session))
        closed = await _released(store, session, folder)
        classes.add(f"{done.outcome if done.fired else 'returned'}|{seen}|{closed}")
    return sorted(classes)


@dataclass(frozen=True)
class CancelledFirstCall(StepSpec):
    """ARIB-RELEASE-001's first fault: a fresh instance's first get_items() cancelled at its
    k-th suspension (while it connects), then the next call, then close().

    An uncancelled first call on a fresh instance of a seeded store counts its suspensions n;
    then for up to ``points`` k spread over 1..n (always the first and the last), each on a
    fresh seeded store: the first call cancelled at k, the next read, close(), and the files
    of the store the process still holds (``/proc/self/fd``).

    Compared: the set of classes ``<call>|<next read>|close_<outcome>|<files>``, e.g.
    ``cancelled|whole_history|close_returned|released``. n is not compared (how often a
    backend suspends while connecting is its own business); a cancelled call ends cancelled
    and the invariant fixes the rest (the whole history served, the files released once
    closed), so every honest lane records the same set whatever its thread schedule. Abstains
    without close() or for a store that is not a file of this process.
    """

    points: int = 4
    kind: ClassVar[str] = "cancelled_first_call"

    async def run(self, ctx: WorkflowContext) -> None:
        """Cancel a fresh instance's first call at spread suspensions and record the classes."""
        store = _store(ctx)
        store.closer(ctx.session)  # abstains up front when there is no close()
        history = _items("first call: kept", 2)

        async def fresh() -> tuple[Any, Path]:
            handle, folder = await _seeded(store, history)
            return (await store.reopen(handle)).session, folder

        session, folder = await fresh()
        probe = await interrupt(session.get_items, 0)
        ctx.record("uncancelled", [f"{probe.outcome}|{await _released(store, session, folder)}"])
        classes = await _swept(
            store,
            spread(probe.suspensions, self.points),
            fresh,
            lambda session: session.get_items,
            lambda seen, how: read_class(seen, how, history),
        )
        ctx.record("outcome_classes", classes)


@dataclass(frozen=True)
class FailedOpen(StepSpec):
    """ARIB-RELEASE-001's second fault: a first call on a store whose folder does not exist.

    An instance is built on a store folder that does not exist and called (get_items); a
    backend that connects in its constructor fails there, one that connects lazily at the
    call: where is not compared, only the class (``store_error_or_served``: an OSError or an
    error class of the store's driver, or served; ``wrong_error:<class>``: an error of the
    session's own code). Then the folder is made and the same instance (a new one where the
    constructor failed) appends one item and reads it back; then close() and the files left.

    Compared: that one row of classes. One task, no race: deterministic. Abstains without
    close() or for a store that is not a file of this process.
    """

    kind: ClassVar[str] = "failed_open"

    async def run(self, ctx: WorkflowContext) -> None:
        """Call an instance on a missing folder, make it, write and read, and record the row."""
        store = _store(ctx)
        store.closer(ctx.session)  # abstains up front when there is no close()
        item = {"role": "user", "content": "failed open: after mkdir"}
        await _seeded(store, [item])  # abstains for a store that is not a file of the process
        build = store.missing_context()
        session: Any = None
        failure: BaseException | None = None
        try:
            session = (await store.open_built(build)).session
            with anyio.fail_after(OP_TIMEOUT_S):
                await session.get_items()
        except Abstain:
            raise
        except Exception as exc:  # noqa: BLE001 - the failure is the outcome
            failure = exc
        build.root.mkdir()
        if session is None:
            session = (await store.open_built(build)).session
        _, added = await bounded(partial(session.add_items, [item]))
        view = read_class(*await read(session), [item])
        row = {
            "first_call": first_call_class(failure),
            "after_mkdir": f"add_{added}|{view}",
            "close": await _released(store, session, build.root),
        }
        ctx.record("failed_open", [row])


@dataclass(frozen=True)
class CancelledClose(StepSpec):
    """ARIB-RELEASE-001's third fault: close() cancelled at its k-th suspension, then a read,
    then one more close().

    An uncancelled close() of a fresh instance (one read served) counts its suspensions n;
    then for up to ``points`` k spread over 1..n, each on a fresh seeded store: close()
    cancelled at k, a read, one more close() and the files left.

    Compared: the set of classes ``<close>|read_<class>|close_<outcome>|<files>``. The read is
    one class ``served_or_refused`` whether it returned the whole history or raised: the
    reference leaves the session open when its close() is cancelled before it starts, and
    AsyncSQLiteSession marks itself closed first, both keep the invariant; only a read that
    hangs or returns other items is a class of its own. Abstains without close(), with a
    synchronous close() (found on the object: it has no suspension to cancel at), or for a
    store that is not a file of this process.
    """

    points: int = 4
    kind: ClassVar[str] = "cancelled_close"

    async def run(self, ctx: WorkflowContext) -> None:
        """Cancel close() at spread suspensions and record the classes."""
        store = _store(ctx)
        close = store.closer(ctx.session)
        if not store.target.claims.close_is_async or not inspect.iscoroutinefunction(close):
            raise Abstain(
                f"{type(ctx.session).__name__}.close of lane target {store.target.name!r} is "
                "synchronous: it has no suspension a cancellation could land at"
            )
        history = _items("close: kept", 2)

        async def fresh() -> tuple[Any, Path]:
            handle, folder = await _seeded(store, history)
            session = (await store.reopen(handle)).session
            await session.get_items()
            return session, folder

        session, folder = await fresh()
        probe = await interrupt(store.closer(session), 0)
        left = await settled_open_files(folder)
        ctx.record("uncancelled", [f"{probe.outcome}|{'files_kept' if left else 'released'}"])
        classes = await _swept(
            store,
            spread(probe.suspensions, self.points),
            fresh,
            store.closer,
            lambda seen, how: f"read_{after_cancelled_close(seen, how, history)}",
        )
        ctx.record("outcome_classes", classes)


async def _configured(
    store: StoreAccess, root: Path, options: dict[str, Any], expected: list[Any] | None = None
) -> str:
    """An instance on ``root`` built with ``options``, then its first read, as a
    ``refusal_class`` (a refusal at construction and at the first call are one class); a
    served read that is not ``expected`` (when given) is ``served_other_items``."""
    try:
        handle = await store.open_configured(root, **options)
        with anyio.fail_after(OP_TIMEOUT_S):
            seen = list(await handle.session.get_items())
    except Abstain:
        raise
    except Exception as exc:  # noqa: BLE001 - the refusal is the outcome
        return refusal_class(exc)
    return "served" if expected is None or same_items(seen, expected) else "served_other_items"


async def _intact(store: StoreAccess, handle: Any, history: list[Any], n: int) -> str:
    """After a refusal: the first instance reads ``history`` and appends one item, and a fresh
    default instance reads the same (``unchanged``); else the first thing that differed."""
    seen, how = await read(handle.session)
    if read_class(seen, how, history) != "whole_history":
        return f"read_{read_class(seen, how, history)}"
    item = {"role": "user", "content": f"tables: after refusal {n}"}
    _, added = await bounded(partial(handle.session.add_items, [item]))
    if added != "returned":
        return f"append_{added}"
    history.append(item)
    fresh = await store.reopen(handle)
    view = read_class(*await read(fresh.session), history)
    return "unchanged" if view == "whole_history" else f"fresh_read_{view}"


@dataclass(frozen=True)
class MisconfiguredTables(StepSpec):
    """ARIB-TABLES-001's fault: instances configured for tables the store does not hold.

    On a store claimed by the lane's default pair and holding two items, in a fixed order:
    an instance with another messages table, another sessions table, the sessions table as
    messages table (these without table creation) and another pair (with it), each opened and
    read, then whether the store is unchanged (the first instance reads and appends, a fresh
    default instance reads the same); then the store's own pair without table creation; then
    a new store without table creation, then with it (one item written), then without it
    again (reading that item).

    Compared: the row of classes per instance (``refused:ValueError`` at construction or at
    the first call alike, ``served``, another outcome class; ``unchanged`` or what differed).
    One task, fixed order: deterministic. Abstains on a lane whose builder does not take the
    constructor options create_tables/sessions_table/messages_table.
    """

    kind: ClassVar[str] = "misconfigured_tables"

    async def run(self, ctx: WorkflowContext) -> None:
        """Open instances with mismatched tables and record each one's outcome and the store."""
        store = _store(ctx)
        missing = sorted(set(TABLE_OPTIONS) - set(store.target.options))
        if missing:
            raise Abstain(
                f"lane target {store.target.name!r} ({store.target.backend}) takes no "
                f"constructor option {', '.join(map(repr, missing))}: no table pair can be "
                "configured"
            )
        history = _items("tables: kept", 2)
        handle = await store.new_store()
        root = store.root_of(handle)
        await handle.session.add_items(list(history))
        rows = []
        for n, (what, options) in enumerate(MISCONFIGURED):
            refused = await _configured(store, root, options)
            rows.append({"instance": what, "outcome": refused,
                         "store": await _intact(store, handle, history, n)})
        ctx.record("misconfigured", rows)
        own = await _configured(store, root, {"create_tables": False}, history)
        ctx.record("own_pair", [own])
        new = store.fork_context().root
        item = {"role": "user", "content": "tables: new store"}
        without = await _configured(store, new, {"create_tables": False})

        async def create() -> None:
            creator = await store.open_configured(new, create_tables=True)
            await creator.session.add_items([item])

        _, created = await bounded(create)
        then = await _configured(store, new, {"create_tables": False}, [item])
        ctx.record("new_store", [{"without_creation": without, "with_creation": created,
                                  "then_without": then}])
