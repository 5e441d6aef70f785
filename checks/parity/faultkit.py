"""What the fault workflows share: store access beyond one session, outcome classes, abstaining.

A fault workflow (``arib.checks.openai_agents.parity.faults``) injects a fault that a check injects
(a cancelled write, a close racing a write, concurrent writers, ...) and records the *outcome class*
of each step rather than raw reads, so that two lanes compare equal exactly when they behave alike:

- an item set is a class (``absent``, ``present``, ``partial``, ``duplicated``), never a count
  that a thread schedule can move;
- an exception is recorded as ``raised:<class>``, the most specific *built-in* class it derives
  from (``SessionClosedError(RuntimeError)`` is ``raised:RuntimeError``): that is what agent
  code written against the Session protocol can catch without importing a backend, and the
  backend's own class names (and messages with paths, ports and ids) would make every backend
  differ from the reference for no behaviour of its own;
- where the invariant allows any order (writers released together), the record is a sorted
  multiset or a per-writer projection, never the interleaving.

``StoreAccess`` gives a fault step what a session alone cannot: another instance on the same
store, a fresh store, the lane's ``close()``. ``Abstain`` ends a workflow as *not applicable*
when the runtime object shows the contract was never offered (no ``close()``, a store that
lives in process memory and cannot be opened twice, a close documented as non-terminal); the
reason names what was found, and the gate lists it instead of comparing.
"""

from __future__ import annotations

import asyncio
import inspect
import json
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from arib.checks._suspend import at_suspension
from arib.ground.errors import UsageError
from arib.targets.base import BuildContext, Handle, NotApplicable, TargetSpec

OP_TIMEOUT_S = 10.0


class Abstain(Exception):
    """The lane's runtime never offered what this fault needs; the message says what it found."""


def outcome(exc: BaseException | None) -> str:
    """An exception (or none) as an outcome class: ``returned`` or ``raised:<type name>``."""
    if exc is None:
        return "returned"
    if isinstance(exc, asyncio.CancelledError):
        return "cancelled"
    if isinstance(exc, TimeoutError):
        return "hung"
    return f"raised:{builtin_class(exc)}"


def builtin_class(exc: BaseException) -> str:
    """The name of the most specific built-in exception class ``exc`` is an instance of."""
    return next(c.__name__ for c in type(exc).__mro__ if c.__module__ == "builtins")


def key(item: Any) -> str:
    """An item as canonical JSON (a value that is not JSON gets a marker with its type)."""
    try:
        return json.dumps(item, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    except (TypeError, ValueError):
        return f"<not JSON: {type(item).__name__}>"


def batch_state(batch: Sequence[Any], seen: Iterable[Any]) -> str:
    """How ``batch`` shows in ``seen``: absent, present (each item once), partial, duplicated."""
    keys = [key(i) for i in seen]
    copies = [keys.count(key(item)) for item in batch]
    if all(c == 0 for c in copies):
        return "absent"
    if all(c == 1 for c in copies):
        return "present"
    if any(c > 1 for c in copies):
        return "duplicated"
    return "partial"


def multiset(items: Iterable[Any]) -> list[Any]:
    """Items sorted by their canonical JSON: equal whatever order they were stored in."""
    return sorted(items, key=key)


def projection(seen: Sequence[Any], mine: Sequence[Any]) -> bool:
    """Whether the items of ``mine`` that are in ``seen`` appear there in ``mine``'s order."""
    wanted = {key(i) for i in mine}
    return [key(i) for i in seen if key(i) in wanted] == [key(i) for i in mine]


async def bounded(call: Callable[[], Awaitable[Any]]) -> tuple[Any, str]:
    """``(value, outcome class)`` of one call under ``OP_TIMEOUT_S``; never raises."""
    try:
        with anyio.fail_after(OP_TIMEOUT_S):
            return await call(), "returned"
    except Exception as exc:  # noqa: BLE001 - a backend's exception is the outcome
        return None, outcome(exc)


async def read(session: Any) -> tuple[list[Any] | None, str]:
    """``get_items()`` as ``(items or None, outcome class)``."""
    items, what = await bounded(session.get_items)
    return (list(items) if items is not None else None), what


@dataclass
class Interrupted:
    """What a call interrupted at one suspension did: its suspensions and outcome class."""

    suspensions: int = 0
    fired: bool = False
    outcome: str = "returned"


async def interrupt(
    make: Callable[[], Awaitable[Any]], k: int, action: Callable[[], Any] | None = None
) -> Interrupted:
    """Run ``make()`` in its own task; at its k-th suspension cancel it, or run ``action``.

    ``k = 0`` never interrupts (it counts the suspensions of an uninterrupted call). An
    ``action`` that returns an awaitable (an async ``close()``) is started as a task of its
    own at that point, so it races the call; it is awaited before this returns.
    """
    result = Interrupted()
    seen = [0]
    started: list[asyncio.Future[Any]] = []

    def fire() -> None:
        result.fired = True
        if action is None:
            task = asyncio.current_task()
            assert task is not None
            task.cancel()
            return
        value = action()
        if inspect.isawaitable(value):
            started.append(asyncio.ensure_future(value))

    async def call() -> None:
        await at_suspension(make(), k, fire, seen)

    task = asyncio.ensure_future(call())
    done, _ = await asyncio.wait({task}, timeout=OP_TIMEOUT_S)
    if not done:
        task.cancel()
        result.outcome = "hung"
    elif task.cancelled():
        result.outcome = "cancelled"
    else:
        result.outcome = outcome(task.exception())
    for side in started:
        await asyncio.wait({side}, timeout=OP_TIMEOUT_S)
    result.suspensions = seen[0]
    return result


def spread(n: int, points: int) -> list[int]:
    """Up to ``points`` suspension indexes in 1..n, always the first and the last, evenly."""
    if n <= 0:
        return []
    if n <= points:
        return list(range(1, n + 1))
    return sorted({1 + round(i * (n - 1) / (points - 1)) for i in range(points)})


@dataclass
class StoreAccess:
    """A fault step's access to the lane beyond its session (the runner makes one per workflow).

    Every instance opened here is disposed of by ``dispose()`` after the workflow.
    """

    target: TargetSpec
    handle: Handle
    root: Path
    session_id: str
    services: Mapping[str, str] = field(default_factory=dict)
    _opened: list[Handle] = field(default_factory=list)
    _roots: dict[int, Path] = field(default_factory=dict)
    _made: int = 0

    def _fresh_root(self) -> Path:
        root = self.missing_context().root
        root.mkdir()
        return root

    def missing_context(self) -> BuildContext:
        """The context of a store whose folder does not exist yet (``root.mkdir()`` makes it)."""
        self._made += 1
        root = self.root / f"store{self._made:03d}"
        return BuildContext(root, self.session_id, dict(self.services))

    def _keep(self, handle: Handle, root: Path) -> Handle:
        self._opened.append(handle)
        self._roots[id(handle)] = root
        return handle

    def root_of(self, handle: Handle) -> Path:
        """The folder of the store ``handle`` is on."""
        return self._roots.get(id(handle), self.root)

    async def new_store(self, session_id: str | None = None) -> Handle:
        """A fresh, empty store (its own folder under the workflow's root)."""
        root = self._fresh_root()
        ctx = BuildContext(root, session_id or self.session_id, dict(self.services))
        return self._keep(await self._build(ctx), root)

    async def _build(self, ctx: BuildContext) -> Handle:
        """The lane's builder; Abstain when it finds the store private to another process."""
        try:
            return await self.target.build(ctx)
        except NotApplicable as exc:
            raise Abstain(f"{self.target.name}: {exc}") from None

    async def reopen(self, handle: Handle | None = None) -> Handle:
        """Another instance on the same store; Abstain when the store cannot be opened twice."""
        handle = handle or self.handle
        try:
            fresh = await handle.reopen()
        except (UsageError, NotApplicable) as exc:  # NotApplicable: the check lanes' own word
            raise Abstain(
                f"{self.target.name}: {exc} (so no second instance can read or write its store)"
            ) from None
        return self._keep(fresh, self.root_of(handle))

    def fork_context(self) -> BuildContext:
        """The context of a fresh store on which nothing is open yet (to fork a writer first)."""
        return BuildContext(self._fresh_root(), self.session_id, dict(self.services))

    async def open_built(self, ctx: BuildContext) -> Handle:
        """An instance on the store of ``ctx`` (made by ``fork_context``)."""
        return self._keep(await self._build(ctx), ctx.root)

    async def peer(self, handle: Handle, session_id: str) -> Handle:
        """An instance of ``session_id`` on the store of ``handle`` (Abstain as ``reopen``)."""
        await self.reopen(handle)  # proves that the store can be shared, or abstains
        root = self.root_of(handle)
        ctx = BuildContext(root, session_id, dict(self.services))
        return self._keep(await self._build(ctx), root)

    async def open_configured(self, root: Path, **options: Any) -> Handle:
        """An instance on the store in ``root`` built with the backend's own constructor
        ``options``; Abstain when the lane's builder takes one of them not."""
        missing = sorted(set(options) - set(self.target.options))
        if missing:
            raise Abstain(
                f"lane target {self.target.name!r} ({self.target.backend}) takes no constructor "
                f"option {', '.join(map(repr, missing))}: the runtime never offered it"
            )
        ctx = BuildContext(root, self.session_id, dict(self.services), options=dict(options))
        return self._keep(await self._build(ctx), root)

    def closer(self, session: Any) -> Callable[[], Any]:
        """The session's ``close`` as the claims say it is; Abstain when there is none."""
        close = getattr(session, "close", None)
        if not self.target.claims.has_close or not callable(close):
            raise Abstain(
                f"{type(session).__name__} of lane target {self.target.name!r} has no close(): "
                "the runtime never offered one"
            )
        return close  # type: ignore[no-any-return]

    def terminal_closer(self, session: Any) -> Callable[[], Any]:
        """``closer()``, and Abstain when close() is documented as not ending the session."""
        close = self.closer(session)
        if not self.target.claims.close_is_terminal:
            raise Abstain(
                f"lane target {self.target.name!r}: close() does not end the session by its "
                f"documentation ({self.target.claims.close_note or 'see the adapter'})"
            )
        return close

    async def close(self, session: Any) -> str:
        """Close ``session``; its outcome class (``returned`` or ``raised:...``)."""
        close = self.closer(session)

        async def call() -> None:
            result = close()
            if inspect.isawaitable(result):
                await result

        return (await bounded(call))[1]

    async def dispose(self) -> None:
        """Dispose of every store this access opened, newest first, ignoring their failures."""
        for handle in reversed(self._opened):
            try:
                await handle.dispose()
            except Exception:  # noqa: BLE001 - disposal after the workflow is not evidence
                pass
        self._opened.clear()
        self._roots.clear()
