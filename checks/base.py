"""What a check is, and the fault-injection tools checks share (barriers, close races)."""

from __future__ import annotations

import importlib
import random
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import anyio

from arib.checks._actors import actors as actors  # re-exported: checks start actors with it
from arib.checks._actors import thread_actors
from arib.checks._actors import thread_point as thread_point  # re-exported
from arib.checks._actors import to_thread as to_thread  # re-exported
from arib.ground.errors import ParameterError
from arib.ground.model import Trial
from arib.ground.schedule import SchedulePlan as SchedulePlan  # re-exported
from arib.ground.schedule import active, adopt
from arib.ground.selector import Selector as Selector  # re-exported: checks name it
from arib.targets.base import BuildContext, Handle, TargetSpec, close_session
from arib.targets.base import NotApplicable as NotApplicable  # re-exported: trials raise it


@dataclass(frozen=True)
class Param:
    """A check parameter: integer, with a default and an allowed range."""

    name: str
    default: int
    low: int
    high: int
    help: str

    def validate(self, check_id: str, value: int) -> int:
        """``value`` if it is within the range, else ParameterError naming it and the fix."""
        if not self.low <= value <= self.high:
            raise ParameterError(
                f"parameter {check_id}.{self.name}={value!r} is out of range: it must be "
                f"between {self.low} and {self.high}; pass e.g. "
                f"--param {check_id}.{self.name}={self.default}"
            )
        return value


@dataclass(frozen=True)
class ParityFault:
    """A check's fault as a parity workflow: its name, domain and sentence, and the step that
    injects the same fault and records how a lane came out of it (``step``: "module:attribute"
    naming a step class, built with no arguments; imported only when the gate runs, as it
    needs the SDK). The family's parity gate derives its fault workflows from these."""

    name: str
    domain: str
    description: str
    step: str

    def build_step(self) -> Any:
        """The step, imported now."""
        module, _, attribute = self.step.partition(":")
        return getattr(importlib.import_module(module), attribute)()


@dataclass(frozen=True)
class CheckSpec:
    """One invariant check: its id, sentence, fault, parameters, body and paired mutants."""

    id: str
    invariant: str
    fault: str
    params: tuple[Param, ...]
    run_trial: Callable[[TrialContext], Awaitable[Trial]]
    mutants: tuple[str, ...]
    generated: tuple[Selector, ...] = ()
    equivalent: Mapping[str, str] = field(default_factory=dict)
    requires_close: bool = False
    requires_terminal_close: bool = False
    trials_param: str = "trials"
    timeout_s: float = 60.0
    hang_invariant: bool = False
    # What a killed writer left behind is judged: its files live on the real disk in every
    # run (fsync as the backend issues it), never on the survey's and admission's tmpfs.
    on_disk: bool = False
    module: str = ""
    # The lane whose clean runs and forced-broken mutant gate this check in admission; empty:
    # the family's reference (a store check of a family whose reference is a checkpointer
    # names the family's reference store).
    reference: str = ""
    # Modules its trials import beyond the lane's backend (the SDK's Runner, its types): the
    # parent imports them once before forking the check's runs, so every child starts warm.
    # A check module imports no such module at module level (checks/registry.py).
    preload: tuple[str, ...] = ()
    # A concurrent check races actors (tasks, threads, forked writers): each trial runs them
    # under a seeded scheduler (``schedule``: its strategy and timers), records its schedule,
    # and a trial that held without starting one through it is a harness error, never a
    # silent uncontrolled run (start them with ``actors()``, ``race()``, ``race_threads()``).
    concurrent: bool = False
    schedule: SchedulePlan = field(default_factory=SchedulePlan)
    # The check's fault as the family's parity workflows (a fault workflow is derived from the
    # check that injects the fault, never written beside it).
    parity: tuple[ParityFault, ...] = ()

    def resolve_params(self, overrides: Mapping[str, int] | None = None) -> dict[str, int]:
        """Defaults overlaid with overrides, each validated; an unknown name is an error."""
        known = {p.name: p for p in self.params}
        values = {p.name: p.default for p in self.params}
        for name, value in (overrides or {}).items():
            if name not in known:
                raise ParameterError(
                    f"unknown parameter {self.id}.{name!r}: {self.id} takes "
                    f"{', '.join(sorted(known)) or 'no parameters'}"
                )
            values[name] = known[name].validate(self.id, value)
        return values

    def to_json(self) -> dict[str, Any]:
        """The JSON form of this check's description: id, invariant, fault, defaults and mutants."""
        return {
            "id": self.id,
            "invariant": self.invariant,
            "fault": self.fault,
            "params": {p.name: p.default for p in self.params},
            "mutants": list(self.mutants),
            "generated": [s.to_json() for s in self.generated],
            "equivalent": dict(self.equivalent),
            "requires_close": self.requires_close,
            "requires_terminal_close": self.requires_terminal_close,
            "timeout_s": self.timeout_s,
            **({"reference": self.reference} if self.reference else {}),
            **({"schedule": self.schedule.to_json()} if self.concurrent else {}),
        }


@dataclass
class TrialContext:
    """Everything one trial of a check gets: its target, seed, parameters and a fresh root."""

    target: TargetSpec
    build: BuildContext
    index: int
    seed: int
    params: Mapping[str, int]
    # When (on time.monotonic()) the harness ends this run. A check whose invariant includes
    # "every call returns" waits for calls at most until shortly before it, and reports a hang
    # as its own finding (arib.checks._bounds.hang_bound); None: no limit known (a test's context).
    deadline: float | None = None
    rng: random.Random = field(init=False)
    ops: list[str] = field(default_factory=list)
    _handles: list[Handle] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)

    def log(self, op: str) -> None:
        """Record an operation, in order, for the replay of a violation."""
        self.ops.append(op)

    async def open(self) -> Handle:
        """Build a fresh backend instance on this trial's store."""
        return self._kept(await self.target.build(self.build))

    def _kept(self, handle: Handle) -> Handle:
        """Dispose of ``handle`` with the trial; in a scheduled trial, the threading locks
        its backend object holds become the scheduler's (``adopt``)."""
        self._handles.append(handle)
        sched = active()
        if sched is not None:
            adopt(sched, handle.session)
        return handle

    async def open_with(self, **changes: Any) -> Handle:
        """A fresh instance built with ``changes`` to this trial's BuildContext: other
        ``services`` URLs (e.g. a fault-injecting relay in front of the real server), another
        ``root`` (another store of this trial) or ``session_id``; disposed with the trial."""
        return self._kept(await self.target.build(replace(self.build, **changes)))

    async def open_configured(self, **options: Any) -> Handle:
        """A fresh instance on this trial's store, built with the backend's own constructor
        ``options`` (e.g. ``ttl=2``); abstains (NotApplicable) on a lane whose builder does
        not take one of them (``TargetSpec.options``)."""
        missing = sorted(set(options) - set(self.target.options))
        if missing:
            raise NotApplicable(
                f"lane {self.target.name!r} ({self.target.backend}) takes no constructor "
                f"option {', '.join(map(repr, missing))}; it takes "
                f"{', '.join(map(repr, sorted(self.target.options))) or 'none'}")
        return await self.open_with(options={**self.build.options, **options})

    async def reopen(self, handle: Handle) -> Handle:
        """Open another instance on the same store (for probes after close)."""
        return self._kept(await handle.reopen())

    async def dispose(self) -> None:
        """Dispose of every instance this trial opened, newest first."""
        for handle in reversed(self._handles):
            await handle.dispose()
        self._handles.clear()

    async def close(self, session: Any) -> None:
        """Close a session the way the target's claims say."""
        await close_session(self.target, session)


class Barrier:
    """Releases ``parties`` tasks together: each waits until all have arrived."""

    def __init__(self, parties: int) -> None:
        self._parties = parties
        self._arrived = 0
        self._event = anyio.Event()

    async def wait(self) -> None:
        """Arrive, then wait until all ``parties`` have arrived."""
        self._arrived += 1
        if self._arrived >= self._parties:
            self._event.set()
        await self._event.wait()


async def race(calls: list[Callable[[], Awaitable[Any]]]) -> list[BaseException | None]:
    """Run async calls as actors released together from one barrier (under the trial's
    scheduler in a concurrent check); return each call's exception."""
    barrier = Barrier(len(calls))
    outcome: list[BaseException | None] = [None] * len(calls)

    async def one(i: int) -> None:
        await barrier.wait()
        try:
            await calls[i]()
        except Exception as exc:  # noqa: BLE001 - the backend's exception is evidence
            outcome[i] = exc

    async with actors() as group:
        for i in range(len(calls)):
            group.start_soon(one, i, name=f"call {i}")
    return outcome


async def race_threads(calls: list[Callable[[], Any]], abandon: bool = False
                       ) -> list[BaseException | None]:
    """Run sync calls as thread actors (``arib.checks._actors.thread_actors``): scheduled in a
    concurrent check, else released together by a threading barrier. ``abandon``: a caller
    cancelled while a thread still runs gives up on it at once (a hung backend call is then
    evidence the caller reports, not a hang of its own)."""
    return await thread_actors(calls, [f"thread {i}" for i in range(len(calls))],
                               abandon=abandon)


async def race_close(ctx: TrialContext, session: Any, parties: int) -> list[BaseException | None]:
    """``parties`` concurrent close() calls that truly overlap (tasks or threads by claim)."""
    if ctx.target.claims.close_is_async:
        return await race([session.close for _ in range(parties)])
    return await race_threads([session.close for _ in range(parties)])


def describe(exc: BaseException | None) -> str:
    """A short one-line description of an exception for samples."""
    if exc is None:
        return "no exception"
    text = str(exc).splitlines()[0] if str(exc) else ""
    return f"{type(exc).__name__}: {text}"[:200]
