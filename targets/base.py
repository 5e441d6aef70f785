"""What a target (one backend lane) is: how to build it, what it claims, what it needs."""

from __future__ import annotations

import contextlib
import importlib
import inspect
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field, replace
from importlib import metadata
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Claims:
    """What an adapter says its backend offers; verified against the runtime object."""

    has_close: bool
    close_is_async: bool = False
    # False when the runtime documents close() as not ending the session (RedisSession with
    # an injected client); close_note cites that documentation. Checks of "a closed session
    # refuses use" then abstain: the runtime never offered that contract.
    close_is_terminal: bool = True
    close_note: str = ""
    # True when the backend itself retries SQLite's transient "database is locked" (retry_note
    # cites where); ARIB-RETRY-001 then holds it to letting none reach the caller, so a false
    # claim shows as that check's violation.
    retries_lock_errors: bool = False
    retry_note: str = ""

    def to_json(self) -> dict[str, Any]:
        """The JSON form of these claims."""
        return {
            "has_close": self.has_close,
            "close_is_async": self.close_is_async,
            "close_is_terminal": self.close_is_terminal,
            "close_note": self.close_note,
            "retries_lock_errors": self.retries_lock_errors,
            "retry_note": self.retry_note,
        }


@dataclass(frozen=True)
class FixedGuard:
    """A condition of the backend's code that the lane's construction fixes for the life of
    every instance it builds (``self._is_memory_db`` is True for ``SQLiteSession(":memory:")``):
    the branches it rules out can never run there (see arib.survey.guards)."""

    expr: str  # as the backend module writes it, in terms of ``self``
    value: bool
    why: str

    def to_json(self) -> dict[str, Any]:
        """The JSON form of this guard."""
        return {"expr": self.expr, "value": self.value, "why": self.why}


class NotApplicable(Exception):
    """Raised when the runtime object shows a contract was never offered (a check abstains).

    The message names what was found on the object (e.g. a store that lives in process
    memory, which no other process can reopen); the finding is ``not_applicable``. Raised by
    a trial, or by a builder or ``Handle.reopen()`` asked for a second instance on a store
    that no second instance can open (re-exported by ``arib.checks.base``).
    """


@dataclass
class Handle:
    """A built backend instance, plus how to open another instance on the same store.

    The store rule, which every adapter keeps: ``reopen()`` (and another build with the
    same ``BuildContext`` root, e.g. as a peer session id) returns an instance on the SAME
    store, never a new, empty one, so that a check reading "through a fresh instance" reads
    what was written. For a store that lives in process memory, that is an instance sharing
    it (a new ``SQLAlchemySession`` on the same ``StaticPool`` engine); where no second
    instance can exist (``SQLiteSession(":memory:")`` keeps its store in the one connection
    of one object) ``reopen()`` raises ``NotApplicable`` naming what it found on the object,
    and ``private_store`` says so up front, so that a check abstains before its fault rather
    than misreading an empty store as lost items.
    """

    session: Any
    reopen: Callable[[], Awaitable[Handle]]
    dispose: Callable[[], Awaitable[None]]
    # Why no second instance can open this store (verified on the runtime object), or None
    # when reopen() and another build on the same root reach the same store.
    private_store: str | None = None
    # Stores the n-th kind of row this session cannot decode, as another writer would leave
    # it (bypassing the session), and says what it stored; None where the adapter has no
    # way to reach the store besides the session (see arib.targets.openai_agents.rows).
    write_undecodable: Callable[[int], Awaitable[str]] | None = None


@dataclass(frozen=True)
class BuildContext:
    """Where and as what a target is built: a fresh temporary root and a session id."""

    root: Path
    session_id: str
    services: dict[str, str] = field(default_factory=dict)
    # Documented constructor keywords of the backend (e.g. RedisSession's ``ttl``,
    # EncryptedSession's ``encryption_key`` or ``max_scan_items``) that the builder passes
    # on; only names in the lane's ``TargetSpec.options`` (see TrialContext.open_configured).
    options: Mapping[str, Any] = field(default_factory=dict)


Builder = Callable[[BuildContext], Awaitable[Handle]]


@dataclass(frozen=True)
class TargetSpec:
    """One backend lane: its name, the class it builds, its claims and its builder."""

    name: str
    backend: str
    module: str
    claims: Claims
    build: Builder
    description: str
    service: str | None = None
    reference: bool = False
    # The longest the backend itself waits before it gives up on a lock held by another
    # connection, in seconds (SQLite's busy timeout is 5 s by default in sqlite3, aiosqlite
    # and SQLAlchemy's pysqlite/aiosqlite dialects); 0 when it has no finite wait. A mutant's
    # time limit leaves room for it (arib.admission.mutant_timeout), so a lock a mutant
    # leaves held ends in "database is locked" (evidence), not in a timeout.
    waits_s: float = 0.0
    # The constructor keywords this lane's builder passes on from ``BuildContext.options``,
    # each with the line of documentation it comes from; a check that needs one the lane
    # lacks abstains (not_applicable), naming it.
    options: Mapping[str, str] = field(default_factory=dict)
    # Guards of the backend module this lane's construction fixes; the survey marks the
    # generated mutants they rule out not_applicable, after verifying each on an instance.
    fixed_guards: tuple[FixedGuard, ...] = ()
    # Modules a build imports besides ``module`` (a driver SQLAlchemy loads by its URL): the
    # parent imports them with ``module`` once before forking the lane's runs.
    preload: tuple[str, ...] = ()
    # More code the survey mutates besides ``backend`` in ``module``: "module" (each class at
    # its top level) or "module:Class" (a user's lane, ``arib.api.lane(mutate=...)``); each
    # is surveyed as a lane of its own, named ``<name>[<Class>]`` (arib.survey.user).
    mutated_also: tuple[str, ...] = ()
    # How a lane outside the family's table was named ("module:attribute"): the replay
    # commands name it so, since its name alone finds nothing (targets.registry.get_target).
    named_by: str = ""
    # The distribution that ships ``module`` when it is not the family's own (a third-party
    # backend): a lane whose distribution is not installed is not measured, naming it
    # (arib.lanes.absent_backend); "" for the family's own backends.
    distribution: str = ""
    # What the family says of a lane besides ``claims`` (LangGraph: ``kind`` and ``api``, see
    # arib.targets.langgraph.lanes), for a lane the family's own tables do not name (a plugin
    # lane); verified on the object by the family's ``verify`` hook like its own lanes' entries.
    traits: Mapping[str, str] = field(default_factory=dict)

    def with_claims(self, claims: Claims) -> TargetSpec:
        """The same lane with other claims (used by claim mutants)."""
        return replace(self, claims=claims)

    def distribution_missing(self) -> str | None:
        """Why this lane is not measured when its ``distribution`` is not installed here (a
        third-party lane whose package is absent); None when it is, or when it names none."""
        if not self.distribution:
            return None
        try:
            metadata.version(self.distribution)
        except metadata.PackageNotFoundError:
            return (f"not measured, because {self.distribution} is not installed (lane "
                    f"{self.name!r} measures its {self.backend}; install it, e.g. from the "
                    f"lane's lock)")
        return None

    def backend_class(self) -> type:
        """The backend class, looked up now so that a re-imported (mutated) module is used."""
        return getattr(importlib.import_module(self.module), self.backend)  # type: ignore[no-any-return]

    def to_json(self) -> dict[str, Any]:
        """The JSON form of this lane (its builder is not included)."""
        return {
            "name": self.name,
            "backend": self.backend,
            "module": self.module,
            "claims": self.claims.to_json(),
            "description": self.description,
            "service": self.service,
            "reference": self.reference,
            "waits_s": self.waits_s,
            "options": dict(self.options),
            "fixed_guards": [g.to_json() for g in self.fixed_guards],
            **({"mutated_also": list(self.mutated_also)} if self.mutated_also else {}),
            # only where set: the family's own lanes' JSON (and what is keyed on it) unchanged
            **({"distribution": self.distribution} if self.distribution else {}),
            **({"traits": dict(self.traits)} if self.traits else {}),
        }


def verify_claims(spec: TargetSpec, session: Any) -> str | None:
    """Check an adapter's claims against the runtime object, both ways; None when true."""
    close = getattr(session, "close", None)
    has_close = callable(close)
    if spec.claims.has_close and not has_close:
        return (
            f"false claim by target {spec.name!r}: claims has_close=True but "
            f"{type(session).__name__} has no callable close(); fix the adapter's Claims"
        )
    if not spec.claims.has_close and has_close:
        return (
            f"false claim by target {spec.name!r}: claims has_close=False but "
            f"{type(session).__name__} has a callable close(); fix the adapter's Claims"
        )
    if has_close:
        is_async = inspect.iscoroutinefunction(close)
        if is_async != spec.claims.close_is_async:
            return (
                f"false claim by target {spec.name!r}: claims close_is_async="
                f"{spec.claims.close_is_async} but {type(session).__name__}.close is "
                f"{'async' if is_async else 'sync'}; fix the adapter's Claims"
            )
    return None


async def verify_close_scope(spec: TargetSpec, session: Any) -> str | None:
    """Check a ``close_is_terminal=False`` claim on a probe instance; None when it is true.

    The claim must cite its documentation, and the object must behave as claimed: after
    close() a read still works. (A false *terminal* claim is what the close checks detect.)
    This closes ``session``: pass a probe instance, never a trial's.
    """
    claims = spec.claims
    if claims.close_is_terminal or not claims.has_close:
        return None
    if not claims.close_note:
        return (
            f"claim by target {spec.name!r}: close_is_terminal=False needs a close_note citing "
            f"where the runtime documents it; fix the adapter's Claims"
        )
    await close_session(spec, session)
    try:
        await session.get_items()
    except Exception as exc:  # noqa: BLE001 - a refusal disproves the claim
        return (
            f"false claim by target {spec.name!r}: claims close_is_terminal=False but "
            f"get_items() after close() raised {exc!r}; fix the adapter's Claims"
        )
    return None


async def quiet_close(session: Any) -> None:
    """Disposal after a trial: call ``session``'s close() if it has one (awaiting an async
    one); the trial is over, so a failing close is not evidence here and is not raised."""
    close = getattr(session, "close", None)
    if not callable(close):
        return
    with contextlib.suppress(Exception):
        result = close()
        if inspect.isawaitable(result):
            await result


async def close_session(spec: TargetSpec, session: Any) -> None:
    """Close a session the way its claims say (await an async close, call a sync one)."""
    if spec.claims.close_is_async:
        await session.close()
    else:
        session.close()
