"""What a user's store offers, found on the object its factory returns, and the checks that follow.

``validate()`` and the pytest plugin, asked for no particular checks, build the store once in a
forked child (``probe``), look on the object for each ``Capability`` (a callable ``close``, a
``limit`` parameter of ``get_items``, the branch, usage and turn methods of
``AdvancedSQLiteSession``), and on the factory's signature for the constructor options a check
opens an instance with (``ttl``, ``encryption_key``, ``max_scan_items``, the table options:
``arib.api.lane.keyword_options``), and run every check of ``DEFAULT_CHECKS`` whose needs it meets
(``plan``). Every other check of the family is listed as not run, with the reason. A claim the
user stated (``@lane(has_close=True)``) is kept and verified against the object, so a
contradicted one is refused as for the built-in lanes; a claim left unstated is what the object
shows. A probe that raises is reported with its cause: the checks that need that capability
become ``error`` findings, never silently "not supported".
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import enum
import functools
import inspect
import tempfile
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from arib.api.lane import Lane, keyword_options, make_session
from arib.checks.base import CheckSpec
from arib.checks.registry import get_check, load_checks
from arib.ground.child import ChildStatus, run_jobs
from arib.targets.base import BuildContext, Claims, quiet_close


class Capability(str, enum.Enum):
    """Something beyond the Session protocol that a check needs from the store."""

    CLOSE = "close()"
    LIMIT = "limit reads"
    BRANCHES = "branches"
    USAGE = "usage records"
    TURNS = "turn queries"
    TTL = "ttl option"
    KEY = "encryption_key option"
    BUDGET = "max_scan_items option"
    TABLES = "table options"


# The methods a capability is: every one must be callable on the object.
METHODS: Mapping[Capability, tuple[str, ...]] = {
    Capability.BRANCHES: ("create_branch_from_turn", "create_branch_from_content",
                          "switch_to_branch", "delete_branch", "list_branches"),
    Capability.USAGE: ("store_run_usage", "get_session_usage", "get_turn_usage",
                       "get_tool_usage"),
    Capability.TURNS: ("get_conversation_turns", "find_turns_by_content"),
}

# The keyword parameters of the factory a capability is (``TrialContext.open_configured``
# opens an instance with them): every one must be among ``keyword_options(factory)``.
OPTIONS: Mapping[Capability, tuple[str, ...]] = {
    Capability.TTL: ("ttl",),
    Capability.KEY: ("encryption_key",),
    Capability.BUDGET: ("max_scan_items",),
    Capability.TABLES: ("create_tables", "sessions_table", "messages_table"),
}

# The checks a user's store is held to when none is named, each with what it needs beyond
# the Session protocol and beyond ``CheckSpec.requires_close`` / ``requires_terminal_close``
# (read from the check: ``needs``). A check that opens an instance with constructor options
# needs the factory to take them (ARIB-TTL-001 ``ttl``, ARIB-KEY-001 ``encryption_key``, whose
# default is the lane's own key, ARIB-BUDGET-001 ``max_scan_items``, ARIB-TABLES-001 the table
# options, whose defaults are the lane's own table pair, created). The family's other checks
# mostly judge what a built-in lane's adapter reaches (the store's raw rows, a driver the
# harness injects faults into, the SDK's wrapper classes), or hold a store to more than the Session
# protocol promises: ARIB-LIMIT-001 wants all items or a refusal for get_items(limit=-1)
# (ARIB-WINDOW-001 also accepts none), ARIB-REPLAY-001 a redelivered batch shown once by its
# item ids, ARIB-MULTI-001 writers in several processes. Named in ``checks=``, they run, and
# abstain (not_applicable) where the object shows the contract is not offered.
DEFAULT_NEEDS: Mapping[str, tuple[Capability, ...]] = {
    "ARIB-CONC-001": (), "ARIB-ORDER-001": (), "ARIB-POP-001": (), "ARIB-CLEAR-001": (),
    "ARIB-ISO-001": (), "ARIB-FIDELITY-001": (), "ARIB-ATOM-001": (), "ARIB-CANCEL-001": (),
    "ARIB-FRESH-001": (), "ARIB-ISO-002": (), "ARIB-DUR-001": (),
    "ARIB-WINDOW-001": (Capability.LIMIT,),
    "ARIB-CONC-002": (), "ARIB-CONC-003": (), "ARIB-DRAIN-001": (Capability.LIMIT,),
    "ARIB-RELEASE-001": (),
    "ARIB-BRANCH-001": (Capability.BRANCHES, Capability.LIMIT),
    "ARIB-BRANCH-002": (Capability.BRANCHES, Capability.USAGE),
    "ARIB-BRANCH-003": (Capability.BRANCHES,),
    "ARIB-USAGE-001": (Capability.USAGE, Capability.BRANCHES),
    "ARIB-USAGE-002": (Capability.USAGE,), "ARIB-USAGE-003": (Capability.USAGE,),
    "ARIB-TURNS-001": (Capability.TURNS, Capability.BRANCHES),
    "ARIB-TTL-001": (Capability.TTL, Capability.LIMIT),
    "ARIB-KEY-001": (Capability.KEY, Capability.LIMIT),
    "ARIB-BUDGET-001": (Capability.BUDGET, Capability.LIMIT),
    "ARIB-TABLES-001": (Capability.TABLES,),
}
DEFAULT_CHECKS = tuple(DEFAULT_NEEDS)
OUT_OF_REACH = ("not in arib.api.DEFAULT_CHECKS, the checks a user's store is held to by "
                "default; name it in checks= to run it")
PROBE_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class Found:
    """One capability looked for on the object: present or not, what was seen, or the
    cause when the probe raised (then it is unknown, never taken as absent)."""

    capability: Capability
    present: bool
    evidence: str
    error: str = ""

    def to_json(self) -> dict[str, Any]:
        """The JSON form of this capability."""
        return {"capability": self.capability.value, "present": self.present,
                "evidence": self.evidence, **({"error": self.error} if self.error else {})}


@dataclass(frozen=True)
class Probed:
    """What one instance showed: each capability, and the claims read off it; ``failed``
    says why no instance could be looked at (the factory raised, the child crashed)."""

    found: tuple[Found, ...] = ()
    claims: Claims | None = None
    failed: str = ""

    def get(self, capability: Capability) -> Found | None:
        """The finding for ``capability``, or None when it was not looked for."""
        return next((f for f in self.found if f.capability is capability), None)


@dataclass(frozen=True)
class Plan:
    """Which checks run on a user's store, which do not (check id -> reason), and which
    cannot be judged because a probe raised (check id -> the cause)."""

    lane: Lane
    run: tuple[CheckSpec, ...]
    skipped: Mapping[str, str] = field(default_factory=dict)
    errors: Mapping[str, str] = field(default_factory=dict)
    capabilities: tuple[Found, ...] = ()


def needs(check: CheckSpec) -> tuple[Capability, ...]:
    """What ``check`` needs of a user's store: close() when its CheckSpec requires one
    (whether close() ends the session is the lane's claim, verified by the check's run),
    and its DEFAULT_NEEDS."""
    own = (Capability.CLOSE,) if check.requires_close or check.requires_terminal_close else ()
    return own + tuple(DEFAULT_NEEDS.get(check.id, ()))


def _close(obj: Any) -> tuple[Found, Claims]:
    """close() as the object shows it, and the claims that follow."""
    close = getattr(obj, "close", None)
    if not callable(close):
        return (Found(Capability.CLOSE, False, f"{type(obj).__name__} has no callable close()"),
                Claims(has_close=False))
    is_async = inspect.iscoroutinefunction(close)
    return (Found(Capability.CLOSE, True, f"{type(obj).__name__} has "
                  f"{'an async' if is_async else 'a sync'} close()"),
            Claims(has_close=True, close_is_async=is_async))


def _limit(obj: Any) -> Found:
    parameters = inspect.signature(obj.get_items).parameters
    takes = "limit" in parameters or any(p.kind is inspect.Parameter.VAR_KEYWORD
                                         for p in parameters.values())
    name = type(obj).__name__
    return Found(Capability.LIMIT, takes,
                 f"{name}.get_items {'takes' if takes else 'takes no'} limit=")


def _methods(capability: Capability, obj: Any) -> Found:
    name = type(obj).__name__
    missing = [m for m in METHODS[capability] if not callable(getattr(obj, m, None))]
    return Found(capability, not missing,
                 f"{name} lacks {', '.join(missing)}" if missing
                 else f"{name} has {', '.join(METHODS[capability])}")


def _option(capability: Capability, user: Lane) -> Found:
    """A constructor option as the factory's signature shows it (never guessed: a
    ``**kwargs`` names none)."""
    takes = keyword_options(user.factory)
    wanted = OPTIONS[capability]
    missing = [name for name in wanted if name not in takes]
    if missing:
        return Found(capability, False, f"factory {user.name} takes no keyword parameter "
                                        f"{', '.join(missing)}")
    return Found(capability, True, f"factory {user.name} takes "
                                   f"{', '.join(f'{name}=' for name in wanted)}")


def _look(capability: Capability, look: Callable[[], Found]) -> Found:
    """``look()``, or the capability as unknown with the cause when the probe raised."""
    try:
        return look()
    except Exception as exc:  # noqa: BLE001 - reported with its cause, never taken as absent
        return Found(capability, False, "", f"probing it raised {exc!r}")


async def _probe(user: Lane, root: Path) -> Probed:
    session = await make_session(user, BuildContext(root, "arib-probe"))
    try:
        claims: Claims | None = None
        try:
            close, claims = _close(session)
        except Exception as exc:  # noqa: BLE001 - reported with its cause
            close = Found(Capability.CLOSE, False, "", f"probing it raised {exc!r}")
        found = [close, _look(Capability.LIMIT, lambda: _limit(session))]
        for capability in METHODS:
            found.append(_look(capability, functools.partial(_methods, capability, session)))
        for capability in OPTIONS:
            found.append(_look(capability, functools.partial(_option, capability, user)))
        return Probed(tuple(found), claims)
    finally:
        with contextlib.suppress(Exception):  # a close() that cannot be found is reported above
            await quiet_close(session)


def probe_in_child(user: Lane) -> Probed:
    """In a forked child: build one instance in a temporary folder and look at it. No event
    loop runs here, even when the parent forked from inside one (as in ``run._judge``)."""
    asyncio.events._set_running_loop(None)
    with tempfile.TemporaryDirectory(prefix="arib-probe-") as tmp:
        try:
            run = functools.partial(anyio.run, _probe, user, Path(tmp), backend="asyncio")
            return contextvars.Context().run(run)
        except Exception as exc:  # noqa: BLE001 - the factory's own failure, reported
            return Probed(failed=f"factory {user.label!r} could not be built to look for "
                                 f"its capabilities: {exc!r}")


def probe(user: Lane) -> Probed:
    """Look at one instance the user's factory makes, in a forked child with a time limit."""
    (outcome,) = run_jobs([lambda: probe_in_child(user)], workers=1, timeout_s=PROBE_TIMEOUT_S)
    if outcome.status is ChildStatus.OK:
        return outcome.value  # type: ignore[no-any-return]
    return Probed(failed=f"the probe of factory {user.label!r} ended with "
                         f"{outcome.status.value}: {outcome.detail.strip()[-300:]}")


def _verdict(check: CheckSpec, probed: Probed) -> tuple[str, str] | None:
    """None when ``check`` runs; ("skip" | "error", reason) when it does not. A need whose
    probe raised comes first: it is reported, whatever else the check lacks."""
    found = [f for f in (probed.get(c) for c in needs(check)) if f is not None]
    for need in found:
        if need.error:
            return "error", (f"could not tell whether the store offers "
                             f"{need.capability.value}, which {check.id} needs: {need.error}; "
                             f"fix the object so that the probe can read it")
    for need in found:
        if not need.present:
            return "skip", f"needs {need.capability.value}: {need.evidence}"
    return None


def plan(user: Lane, chosen: Iterable[CheckSpec] | None) -> Plan:
    """The checks to run on ``user``'s store: the ``chosen`` ones as named, or, when None,
    every default check whose needs the object meets; claims left unstated are taken from
    the object."""
    probed = probe(user)
    if probed.claims is not None:
        user = user.with_found(probed.claims)
    if chosen is not None:
        return Plan(user, tuple(chosen), capabilities=probed.found)
    out_of_reach = {c.id: OUT_OF_REACH for c in load_checks() if c.id not in DEFAULT_NEEDS}
    if probed.failed:  # no object to look at: the plain checks report why, the rest wait
        plain = tuple(get_check(i) for i in DEFAULT_CHECKS if not needs(get_check(i)))
        waiting = {i: f"not probed: {probed.failed}" for i in DEFAULT_CHECKS
                   if i not in {c.id for c in plain}}
        return Plan(user, plain, skipped={**waiting, **out_of_reach})
    run: list[CheckSpec] = []
    skipped: dict[str, str] = {}
    errors: dict[str, str] = {}
    for check_id in DEFAULT_CHECKS:
        check = get_check(check_id)
        verdict = _verdict(check, probed)
        if verdict is None:
            run.append(check)
        elif verdict[0] == "error":
            errors[check.id] = verdict[1]
        else:
            skipped[check.id] = verdict[1]
    return Plan(user, tuple(run), {**skipped, **out_of_reach}, errors, probed.found)
