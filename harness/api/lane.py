"""A user's own store as a lane: a factory that makes a fresh store, plus the claims it states.

The factory is ``factory(root: Path, session_id: str) -> Session`` (sync or async): it keeps
its store under ``root``, so that a second call with the same ``root`` reads the same store
(the store rule of ``arib.targets.base.Handle``), and returns an object with the openai-agents
``Session`` methods. ``@lane(has_close=True)`` states claims, which are verified against the
object the factory returns (a contradicted claim is refused); a claim left unstated is what
the object shows (``arib.api.capability``: a callable ``close`` is ``has_close=True``).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, overload

from arib.ground.errors import UsageError
from arib.targets.base import BuildContext, Claims, Handle, TargetSpec, quiet_close

# The openai-agents Session protocol: what the object a factory returns must offer.
SESSION_METHODS = ("get_items", "add_items", "pop_item", "clear_session")

Factory = Callable[[Path, str], Any]
# The claims @lane(...) states; one left out is found on the object (Lane.with_found).
CLAIM_NAMES = ("has_close", "close_is_async", "close_is_terminal", "close_note")


def factory_name(factory: Callable[..., Any]) -> str:
    """``module.qualname`` of a factory, as reports and error messages name it."""
    module = getattr(factory, "__module__", None) or "?"
    return f"{module}.{getattr(factory, '__qualname__', repr(factory))}"


@dataclass(frozen=True)
class Lane:
    """A user's factory with its claims; calling it calls the factory. ``declared`` names the
    claims the user stated; the others are defaults until found on the object
    (``with_found``)."""

    factory: Factory
    claims: Claims
    name: str
    declared: frozenset[str] = frozenset(CLAIM_NAMES)

    def __call__(self, root: Path, session_id: str) -> Any:
        return self.factory(root, session_id)

    @property
    def label(self) -> str:
        """The factory's ``module.qualname``."""
        return factory_name(self.factory)

    def with_found(self, found: Claims) -> Lane:
        """This lane with every claim it did not state taken from ``found`` (what the
        object shows); the stated ones stay, to be verified against the object."""
        taken = {name: getattr(found, name) for name in CLAIM_NAMES if name not in self.declared}
        return replace(self, claims=replace(self.claims, **taken), declared=frozenset(CLAIM_NAMES))

    def spec(self) -> TargetSpec:
        """The lane as a ``TargetSpec``, built the way ``targets/`` lanes are."""
        return TargetSpec(
            name=self.name, backend=getattr(self.factory, "__qualname__", self.name),
            module=getattr(self.factory, "__module__", "") or "", claims=self.claims,
            build=_builder(self), description=f"user factory {self.label}")


@overload
def lane(factory: Factory, *, name: str | None = ..., has_close: bool | None = ...,
         close_is_async: bool | None = ..., close_is_terminal: bool | None = ...,
         close_note: str | None = ...) -> Lane: ...


@overload
def lane(factory: None = ..., *, name: str | None = ..., has_close: bool | None = ...,
         close_is_async: bool | None = ..., close_is_terminal: bool | None = ...,
         close_note: str | None = ...) -> Callable[[Factory], Lane]: ...


def lane(factory: Factory | None = None, *, name: str | None = None,
         has_close: bool | None = None, close_is_async: bool | None = None,
         close_is_terminal: bool | None = None, close_note: str | None = None
         ) -> Lane | Callable[[Factory], Lane]:
    """Decorate a store factory with its claims: ``@lane`` or ``@lane(has_close=True)``; a
    claim left out (None) is found on the object the factory returns."""
    stated = {"has_close": has_close, "close_is_async": close_is_async,
              "close_is_terminal": close_is_terminal, "close_note": close_note}
    declared = frozenset(k for k, v in stated.items() if v is not None)
    claims = Claims(has_close=bool(has_close), close_is_async=bool(close_is_async),
                    close_is_terminal=close_is_terminal is not False,
                    close_note=close_note or "")

    def wrap(made: Factory) -> Lane:
        if not callable(made):
            raise UsageError(f"lane() got {made!r}, which is not callable; the rule: a factory "
                             f"is (root: Path, session_id: str) -> Session; pass a function")
        return Lane(made, claims, name or str(getattr(made, "__qualname__", "user-store")),
                    declared)

    return wrap if factory is None else wrap(factory)


def as_lane(factory: Lane | Factory) -> Lane:
    """A ``Lane`` as given, or a bare factory stating no claim (all found on the object)."""
    return factory if isinstance(factory, Lane) else lane(factory)


def _missing_methods(session: Any) -> list[str]:
    return [m for m in SESSION_METHODS if not callable(getattr(session, m, None))]


async def make_session(user: Lane, ctx: BuildContext) -> Any:
    """Call the factory (awaiting an async one) and insist on a Session-like object."""
    made = user.factory(ctx.root, ctx.session_id)
    if inspect.isawaitable(made):
        made = await made
    missing = _missing_methods(made)
    if missing:
        raise TypeError(
            f"factory {user.label!r} returned {made!r} ({type(made).__name__}), which lacks "
            f"{', '.join(missing)}; the rule: it returns a Session "
            f"({', '.join(SESSION_METHODS)}); fix the factory's return value")
    return made


def _builder(user: Lane) -> Callable[[BuildContext], Any]:
    """An ``arib.targets.base.Builder`` that calls the user's factory on the trial's root."""

    async def build(ctx: BuildContext) -> Handle:
        session = await make_session(user, ctx)

        async def reopen() -> Handle:
            return await build(ctx)

        async def dispose() -> None:
            if user.claims.has_close:  # a store that claims none is not closed
                await quiet_close(session)

        return Handle(session=session, reopen=reopen, dispose=dispose)

    return build
