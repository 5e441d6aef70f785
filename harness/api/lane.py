"""A user's own store as a lane: a factory that makes a fresh store, plus the claims it states.

The factory is ``factory(root: Path, session_id: str) -> Session`` (sync or async): it keeps
its store under ``root``, so that a second call with the same ``root`` reads the same store
(the store rule of ``arib.targets.base.Handle``), and returns an object with the openai-agents
``Session`` methods. ``@lane(has_close=True)`` states claims, which are verified against the
object the factory returns (a contradicted claim is refused); a claim left unstated is what
the object shows (``arib.api.capability``: a callable ``close`` is ``has_close=True``).

A factory may take the store's constructor options as keyword parameters after
``(root, session_id)``, each with a default (``def my_store(root, session_id, *, ttl=None)``):
they are the lane's ``TargetSpec.options``, found on its signature (``keyword_options``), and a
check that opens an instance with an option (``TrialContext.open_configured(ttl=1)``) gets the
factory called with it, as a built-in lane's builder is.
"""

from __future__ import annotations

import contextlib
import inspect
import sys
import typing
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from types import ModuleType
from typing import Any, overload

from arib.ground.errors import UsageError
from arib.targets.base import (
    BuildContext,
    Claims,
    Handle,
    NotApplicable,
    TargetSpec,
    quiet_close,
)

# The openai-agents Session protocol: what the object a factory returns must offer.
SESSION_METHODS = ("get_items", "add_items", "pop_item", "clear_session")

# (root: Path, session_id: str, **constructor options) -> Session
Factory = Callable[..., Any]
# The claims @lane(...) states; one left out is found on the object (Lane.with_found).
CLAIM_NAMES = ("has_close", "close_is_async", "close_is_terminal", "close_note")
# The first parameters of a store class that is its own factory (class_lane_error).
CLASS_PARAMETERS = ("root", "session_id")


def factory_name(factory: Callable[..., Any]) -> str:
    """``module.qualname`` of a factory, as reports and error messages name it."""
    module = getattr(factory, "__module__", None) or "?"
    return f"{module}.{getattr(factory, '__qualname__', repr(factory))}"


def keyword_options(factory: Callable[..., Any]) -> tuple[str, ...]:
    """The constructor options ``factory`` takes, read off its signature: every parameter
    after ``(root, session_id)`` that can be passed by keyword (``*, ttl=None``); a
    ``**kwargs`` names none. Raises ValueError or TypeError when the signature cannot be
    read, and UsageError naming an option without a default (a trial calls the factory
    without it)."""
    parameters = list(inspect.signature(factory).parameters.values())
    positional = [p for p in parameters
                  if p.kind in (inspect.Parameter.POSITIONAL_ONLY,
                                inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    rest = positional[2:] + [p for p in parameters if p.kind is inspect.Parameter.KEYWORD_ONLY]
    required = [p.name for p in rest if p.default is inspect.Parameter.empty]
    if required:
        raise UsageError(
            f"factory {factory_name(factory)!r} has parameter(s) {', '.join(map(repr, required))} "
            f"without a default; the rule: a factory is (root, session_id) plus constructor "
            f"options that each have a default (the lane's own instance is built without "
            f"them); fix: give each a default, e.g. `*, ttl=None`")
    return tuple(p.name for p in rest if p.kind is not inspect.Parameter.POSITIONAL_ONLY)


def class_lane_error(cls: type) -> str | None:
    """Why class ``cls`` cannot be its own factory, or None when its constructor's first two
    parameters are ``(root, session_id)`` (``CLASS_PARAMETERS``)."""
    where = f"class {factory_name(cls)}"
    try:
        parameters = list(inspect.signature(cls).parameters.values())
    except (ValueError, TypeError) as exc:
        return f"{where}: its constructor's signature cannot be read ({exc})"
    names = tuple(p.name for p in parameters[:2]
                  if p.kind in (inspect.Parameter.POSITIONAL_ONLY,
                                inspect.Parameter.POSITIONAL_OR_KEYWORD))
    if names == CLASS_PARAMETERS:
        return None
    return (f"{where} is built as {cls.__name__}({', '.join(p.name for p in parameters)}); the "
            f"rule: a class is a lane when its constructor takes (root, session_id) first, "
            f"root the folder its store lives in; fix: name a factory, e.g. `def "
            f"my_store(root, session_id): return {cls.__name__}(...)` decorated with @lane")


def _readable_options(factory: Callable[..., Any]) -> tuple[str, ...]:
    """``keyword_options``, or none when the signature cannot be read (the capability probe
    reports that with its cause)."""
    try:
        return keyword_options(factory)
    except (ValueError, TypeError):
        return ()


@dataclass(frozen=True)
class Lane:
    """A user's factory with its claims; calling it calls the factory. ``declared`` names the
    claims the user stated; the others are defaults until found on the object
    (``with_found``)."""

    factory: Factory
    claims: Claims
    name: str
    declared: frozenset[str] = frozenset(CLAIM_NAMES)
    # "module:Class", the class a survey mutates; None: the class the factory returns
    store: str | None = None
    # more code the survey mutates: "module" (its top-level classes) or "module:Class"
    mutate: tuple[str, ...] = ()

    def __call__(self, root: Path, session_id: str, **options: Any) -> Any:
        return self.factory(root, session_id, **options)

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
        """The lane as a ``TargetSpec``, built the way ``targets/`` lanes are; its module and
        backend name the store class stated (``store=``, the factory itself when it is a class,
        else the factory's return annotation of a top-level class), else the factory
        (``arib.survey.user`` then finds the class the factory returns); ``mutated_also`` is
        ``mutate``."""
        own = _reference(self.factory) if isinstance(self.factory, type) else None
        module, _, backend = (self.store or own or _annotated(self.factory) or "").partition(":")
        return TargetSpec(
            name=self.name,
            backend=backend or getattr(self.factory, "__qualname__", self.name),
            module=module or getattr(self.factory, "__module__", "") or "", claims=self.claims,
            build=_builder(self), description=f"user factory {self.label}",
            options={name: f"keyword parameter {name!r} of the factory {self.label}"
                     for name in _readable_options(self.factory)},
            mutated_also=self.mutate)


@overload
def lane(factory: Factory, *, name: str | None = ..., has_close: bool | None = ...,
         close_is_async: bool | None = ..., close_is_terminal: bool | None = ...,
         close_note: str | None = ..., store: type | str | None = ...,
         mutate: Iterable[type | ModuleType | str] = ...) -> Lane: ...


@overload
def lane(factory: None = ..., *, name: str | None = ..., has_close: bool | None = ...,
         close_is_async: bool | None = ..., close_is_terminal: bool | None = ...,
         close_note: str | None = ..., store: type | str | None = ...,
         mutate: Iterable[type | ModuleType | str] = ...) -> Callable[[Factory], Lane]: ...


def lane(factory: Factory | None = None, *, name: str | None = None,
         has_close: bool | None = None, close_is_async: bool | None = None,
         close_is_terminal: bool | None = None, close_note: str | None = None,
         store: type | str | None = None, mutate: Iterable[type | ModuleType | str] = ()
         ) -> Lane | Callable[[Factory], Lane]:
    """Decorate a store factory with its claims: ``@lane`` or ``@lane(has_close=True)``; a
    claim left out (None) is found on the object the factory returns. ``store`` (a class or
    ``"module:Class"``) names the class a survey mutates, when it is not the class the
    factory returns; ``mutate`` names more that it mutates (modules, classes, or their
    ``"module"`` / ``"module:Class"`` names). A class whose constructor takes ``(root,
    session_id)`` may be given as the factory (``class_lane_error``)."""
    stated = {"has_close": has_close, "close_is_async": close_is_async,
              "close_is_terminal": close_is_terminal, "close_note": close_note}
    declared = frozenset(k for k, v in stated.items() if v is not None)
    claims = Claims(has_close=bool(has_close), close_is_async=bool(close_is_async),
                    close_is_terminal=close_is_terminal is not False,
                    close_note=close_note or "")
    store_ref = _store_ref(store)
    also = _mutate_refs(mutate)

    def wrap(made: Factory) -> Lane:
        if not callable(made):
            raise UsageError(f"lane() got {made!r}, which is not callable; the rule: a factory "
                             f"is (root: Path, session_id: str) -> Session; pass a function")
        why = class_lane_error(made) if isinstance(made, type) else None
        if why is not None:
            raise UsageError(why)
        with contextlib.suppress(ValueError, TypeError):  # unreadable: reported by the probe
            keyword_options(made)  # an option without a default is refused here
        return Lane(made, claims, name or str(getattr(made, "__qualname__", "user-store")),
                    declared, store_ref, also)

    return wrap if factory is None else wrap(factory)


def _annotated(factory: Factory) -> str | None:
    """``"module:Class"`` of a factory's return annotation naming a top-level class, or None."""
    try:
        made = typing.get_type_hints(factory).get("return")
    except Exception:  # noqa: BLE001 - an annotation that cannot be resolved says nothing
        return None
    if not isinstance(made, type) or "." in made.__qualname__:
        return None
    return f"{made.__module__}:{made.__qualname__}"


def _reference(cls: type) -> str:
    return f"{cls.__module__}:{cls.__qualname__}"


def _mutate_refs(mutate: Iterable[type | ModuleType | str]) -> tuple[str, ...]:
    """``mutate`` as ``"module"`` / ``"module:Class"`` names; UsageError naming anything else."""
    if isinstance(mutate, (str, type, ModuleType)):
        mutate = (mutate,)
    refs: list[str] = []
    for item in mutate:
        if isinstance(item, type):
            refs.append(_reference(item))
        elif isinstance(item, ModuleType):
            refs.append(item.__name__)
        elif isinstance(item, str) and all(
                part.isidentifier() for part in item.replace(":", ".").split(".")) \
                and item.count(":") <= 1:
            refs.append(item)
        else:
            raise UsageError(f"lane(mutate=[..., {item!r}, ...]): the rule: mutate names code "
                             f"the survey mutates besides the store class: a module, a class, "
                             f"'module' or 'module:Class'; fix: e.g. mutate=['my_pkg.codec']")
    return tuple(dict.fromkeys(refs))


def _store_ref(store: type | str | None) -> str | None:
    """``store`` as ``"module:Class"``; UsageError naming anything else."""
    if store is None:
        return None
    if isinstance(store, type):
        return _reference(store)
    module, sep, qualname = store.partition(":") if isinstance(store, str) else ("", "", "")
    if not (sep and module and qualname):
        raise UsageError(f"lane(store={store!r}): the rule: store is the class a survey "
                         f"mutates, a class or 'module:Class'; fix: pass the class itself")
    return store


def as_lane(factory: Lane | Factory) -> Lane:
    """A ``Lane`` as given, or a bare factory stating no claim (all found on the object)."""
    return factory if isinstance(factory, Lane) else lane(factory)


def _missing_methods(session: Any) -> list[str]:
    return [m for m in SESSION_METHODS if not callable(getattr(session, m, None))]


async def make_session(user: Lane, ctx: BuildContext) -> Any:
    """Call the factory with the trial's constructor options (awaiting an async one) and
    insist on a Session-like object; an option the factory does not take abstains
    (NotApplicable), naming it."""
    missing = sorted(set(ctx.options) - set(_readable_options(user.factory)))
    if missing:
        raise NotApplicable(
            f"factory {user.label!r} takes no keyword parameter "
            f"{', '.join(map(repr, missing))}, the constructor option(s) this trial opens an "
            f"instance with")
    made = _current(user.factory)(ctx.root, ctx.session_id, **ctx.options)
    if inspect.isawaitable(made):
        made = await made
    missing = _missing_methods(made)
    if missing:
        raise TypeError(
            f"factory {user.label!r} returned {made!r} ({type(made).__name__}), which lacks "
            f"{', '.join(missing)}; the rule: it returns a Session "
            f"({', '.join(SESSION_METHODS)}); fix the factory's return value")
    return made


def _current(factory: Factory) -> Factory:
    """A class given as the factory as its module binds it now: a survey's mutant re-executes
    the module, and the lane must build the mutant's class, not the one it was given."""
    if not isinstance(factory, type):
        return factory
    found = getattr(sys.modules.get(factory.__module__), factory.__qualname__, None)
    return found if isinstance(found, type) else factory


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
