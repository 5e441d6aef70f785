"""The LangGraph family's lanes: each a saver (or store) class built one way, on its own store.

``Handle.session`` is the saver, or on a store lane (``STORE_LANES``) the store. Every trial
gets a fresh store under its root (a SQLite file, or, for the PostgreSQL lanes, a schema of its
own: ``arib.targets.langgraph.services``), and ``reopen()`` opens another instance on that store.
``KIND`` says whether a lane is a checkpointer or a store (checks abstain on the other kind:
``arib.checks.langgraph._saver.saver_of`` / ``store_of``). ``API`` says which half of the
interface a lane's class serves (``sync``, ``async``, ``both``, or ``async-only``: the async half,
its sync methods refusing from any thread); the checks call that half
(``arib.checks.langgraph._saver``), and the claim is verified against the runtime object
(``verify_api``, the family's ``verify`` hook).
"""

from __future__ import annotations

import importlib
import re
import sqlite3
from collections.abc import Iterator, Mapping, MutableMapping
from typing import Any

import anyio.to_thread

from arib.ground.interrupts import alarm_after
from arib.ground.sources import module_source
from arib.targets.base import BuildContext, Claims, Handle, NotApplicable, TargetSpec
from arib.targets.langgraph import stores
from arib.targets.langgraph.services import (
    PG_ASYNC_SAVER_MODULE,
    PG_SAVER_MODULE,
    PG_SHALLOW_MODULE,
    async_pg_builder,
    class_in,
    file_builder,
    private_handle,
    sync_pg_builder,
)

MEMORY_MODULE = "langgraph.checkpoint.memory"
SQLITE_MODULE = "langgraph.checkpoint.sqlite"
ASYNC_SQLITE_MODULE = "langgraph.checkpoint.sqlite.aio"
REFERENCE_MODULE = "arib.targets.langgraph.reference"
# No saver or store of these packages has a close(): the caller owns the connection it passed.
NO_CLOSE = Claims(has_close=False)
_saver_class = class_in


_build_reference = file_builder(REFERENCE_MODULE, "ReferenceSaver", "reference.db")


def _memory_class() -> str:
    """The in-memory saver's class as the installed release defines it: InMemorySaver, or
    MemorySaver before the rename (after it, MemorySaver is only an alias, which neither the
    mutant generator nor the lane check can take for the class). Read from the module's source,
    not imported: building the table of lanes imports no backend (a run imports only its own
    lane's, arib.warm)."""
    try:
        source = module_source(MEMORY_MODULE)
    except OSError:
        return "InMemorySaver"
    return "InMemorySaver" if re.search(r"^class InMemorySaver\b", source, re.M) else "MemorySaver"


async def _build_memory(ctx: BuildContext) -> Handle:
    saver = _saver_class(MEMORY_MODULE, "InMemorySaver", "MemorySaver")()
    return private_handle(saver, f"{type(saver).__name__} keeps its checkpoints in this "
                                 f"object's dictionaries; no second instance reaches them")


async def _build_sqlite(ctx: BuildContext) -> Handle:
    conn = sqlite3.connect(ctx.root / "checkpoints.db", check_same_thread=False)
    saver = _saver_class(SQLITE_MODULE, "SqliteSaver")(conn)

    async def dispose() -> None:
        conn.close()

    return Handle(session=saver, reopen=lambda: _build_sqlite(ctx), dispose=dispose)


async def _build_async_sqlite(ctx: BuildContext, memory: bool = False) -> Handle:
    aiosqlite = importlib.import_module("aiosqlite")
    conn = await aiosqlite.connect(":memory:" if memory else str(ctx.root / "checkpoints.db"))
    saver = _saver_class(ASYNC_SQLITE_MODULE, "AsyncSqliteSaver")(conn)

    async def dispose() -> None:
        await conn.close()

    if memory:
        return private_handle(saver, "AsyncSqliteSaver on ':memory:' keeps its store in its "
                                     "one aiosqlite connection", dispose)
    return Handle(session=saver, reopen=lambda: _build_async_sqlite(ctx), dispose=dispose)


async def _build_async_sqlite_memory(ctx: BuildContext) -> Handle:
    return await _build_async_sqlite(ctx, memory=True)


REFERENCE = TargetSpec(
    name="lg-reference", backend="ReferenceSaver", module=REFERENCE_MODULE, claims=NO_CLOSE,
    build=_build_reference, reference=True,
    description="our reference checkpointer: one SQLite file, one lock, durable on return",
)
MEMORY = TargetSpec(
    name="lg-memory", backend=_memory_class(), module=MEMORY_MODULE, claims=NO_CLOSE,
    build=_build_memory,
    description="InMemorySaver (MemorySaver in the releases before its rename)",
)
SQLITE_FILE = TargetSpec(
    name="lg-sqlite-file", backend="SqliteSaver", module=SQLITE_MODULE, claims=NO_CLOSE,
    build=_build_sqlite, waits_s=5.0,
    description="SqliteSaver on a sqlite3 connection to a file (check_same_thread=False)",
)
ASYNC_SQLITE_FILE = TargetSpec(
    name="lg-async-sqlite-file", backend="AsyncSqliteSaver", module=ASYNC_SQLITE_MODULE,
    claims=NO_CLOSE, build=_build_async_sqlite, waits_s=5.0,
    description="AsyncSqliteSaver on an aiosqlite connection to a file",
)
ASYNC_SQLITE_MEMORY = TargetSpec(
    name="lg-async-sqlite-memory", backend="AsyncSqliteSaver", module=ASYNC_SQLITE_MODULE,
    claims=NO_CLOSE, build=_build_async_sqlite_memory,
    description="AsyncSqliteSaver on an aiosqlite connection to ':memory:'",
)


def _postgres(name: str, backend: str, module: str, description: str, *,
              is_async: bool = False, pipeline: bool = False, pool: bool = False,
              options: Mapping[str, str] | None = None) -> TargetSpec:
    build = (async_pg_builder(name, module, (backend,), pipeline=pipeline, pool=pool)
             if is_async else sync_pg_builder(name, module, (backend,), pipeline=pipeline))
    return TargetSpec(name=name, backend=backend, module=module, claims=NO_CLOSE, build=build,
                      service="postgres", description=description, options=options or {})


_PG_CONN = ("a psycopg {kind} on the harness's PostgreSQL (autocommit, dict_row, "
            "prepare_threshold=0), one schema per trial")
POSTGRES = _postgres("lg-postgres", "PostgresSaver", PG_SAVER_MODULE,
                     "PostgresSaver on " + _PG_CONN.format(kind="Connection"))
POSTGRES_PIPELINE = _postgres(
    "lg-postgres-pipeline", "PostgresSaver", PG_SAVER_MODULE, pipeline=True,
    description="PostgresSaver(conn, pipe=conn.pipeline()) on " + _PG_CONN.format(
        kind="Connection"))
ASYNC_POSTGRES = _postgres("lg-async-postgres", "AsyncPostgresSaver", PG_ASYNC_SAVER_MODULE,
                           "AsyncPostgresSaver on " + _PG_CONN.format(kind="AsyncConnection"),
                           is_async=True)
ASYNC_POSTGRES_PIPELINE = _postgres(
    "lg-async-postgres-pipeline", "AsyncPostgresSaver", PG_ASYNC_SAVER_MODULE, is_async=True,
    pipeline=True, description="AsyncPostgresSaver(conn, pipe=conn.pipeline()) on "
                               + _PG_CONN.format(kind="AsyncConnection"))
ASYNC_POSTGRES_POOL = _postgres(
    "lg-async-postgres-pool", "AsyncPostgresSaver", PG_ASYNC_SAVER_MODULE, is_async=True,
    pool=True, description="AsyncPostgresSaver on a psycopg_pool AsyncConnectionPool "
                           "(1..4 connections, each autocommit, dict_row, prepare_threshold=0) "
                           "on the harness's PostgreSQL, one schema per trial")
SHALLOW_POSTGRES = _postgres(
    "lg-shallow-postgres", "ShallowPostgresSaver", PG_SHALLOW_MODULE,
    "ShallowPostgresSaver (keeps only a thread's latest checkpoint; deprecated since "
    "-postgres 2.0.20) on " + _PG_CONN.format(kind="Connection"))
ASYNC_SHALLOW_POSTGRES = _postgres(
    "lg-async-shallow-postgres", "AsyncShallowPostgresSaver", PG_SHALLOW_MODULE, is_async=True,
    description="AsyncShallowPostgresSaver (keeps only a thread's latest checkpoint; "
                "deprecated since -postgres 2.0.20) on "
                + _PG_CONN.format(kind="AsyncConnection"))

STORE_REFERENCE = TargetSpec(
    name="lg-store-reference", backend="ReferenceStore", module=stores.REFERENCE_STORE_MODULE,
    claims=NO_CLOSE, build=stores.build_reference_store,
    options={**stores.TTL_OPTION, **stores.INDEX_OPTION},
    description="our reference store: one SQLite file, one lock, durable on return")
STORE_MEMORY = TargetSpec(
    name="lg-store-memory", backend="InMemoryStore", module=stores.MEMORY_STORE_MODULE,
    claims=NO_CLOSE, build=stores.build_memory_store, options=stores.INDEX_OPTION,
    description="InMemoryStore")
STORE_SQLITE_FILE = TargetSpec(
    name="lg-store-sqlite-file", backend="SqliteStore", module=stores.SQLITE_STORE_MODULE,
    claims=NO_CLOSE, build=stores.build_sqlite_store, waits_s=5.0,
    options={**stores.TTL_OPTION, **stores.INDEX_OPTION},
    description=f"SqliteStore on a connection to a file (autocommit, check_same_thread=False; "
                f"{stores.DRIVER_NOTE})")
STORE_ASYNC_SQLITE_FILE = TargetSpec(
    name="lg-store-async-sqlite-file", backend="AsyncSqliteStore",
    module=stores.ASYNC_SQLITE_STORE_MODULE, claims=NO_CLOSE,
    build=stores.build_async_sqlite_store, waits_s=5.0,
    options={**stores.TTL_OPTION, **stores.INDEX_OPTION},
    description=f"AsyncSqliteStore on an aiosqlite connection to a file (autocommit; "
                f"{stores.DRIVER_NOTE})")
STORE_POSTGRES = _postgres("lg-store-postgres", "PostgresStore", stores.PG_STORE_MODULE,
                           "PostgresStore on " + _PG_CONN.format(kind="Connection"),
                           options=stores.TTL_OPTION)
STORE_ASYNC_POSTGRES = _postgres(
    "lg-store-async-postgres", "AsyncPostgresStore", stores.PG_ASYNC_STORE_MODULE,
    "AsyncPostgresStore on " + _PG_CONN.format(kind="AsyncConnection"), is_async=True,
    options=stores.TTL_OPTION)

class _Declared(MutableMapping[str, str]):
    """A table of the family's own lanes (``KIND``, ``API``), then of the lanes installed
    packages add (arib.ground.family.plugin_lanes), each by the ``TargetSpec.traits`` entry
    ``trait`` it declares: a third-party saver says what it is and which half it serves the way
    the family's own lanes do here, and the same ``verify_api`` checks it on the object."""

    def __init__(self, own: Mapping[str, str], trait: str) -> None:
        self._own, self._trait = dict(own), trait

    def _plugins(self) -> dict[str, str]:
        return {lane.name: lane.traits[self._trait] for lane in plugin_specs()
                if self._trait in lane.traits and lane.name not in self._own}

    def __getitem__(self, name: str) -> str:
        if name in self._own:
            return self._own[name]
        plugins = self._plugins()
        if name in plugins:
            return plugins[name]
        # ``<lane>[<Class>]``: the survey's lane of one more class a lane names to mutate
        # (arib.survey.user.store_lanes), built by that lane's factory: the same object
        base, bracket, rest = name.partition("[")
        if bracket and rest.endswith("]") and base:
            return self[base]
        raise KeyError(name)

    def __setitem__(self, name: str, value: str) -> None:  # the family's own table
        self._own[name] = value

    def __delitem__(self, name: str) -> None:
        del self._own[name]

    def __iter__(self) -> Iterator[str]:
        return iter({**self._own, **self._plugins()})

    def __len__(self) -> int:
        return len({**self._own, **self._plugins()})


def checkpointer_lanes() -> tuple[TargetSpec, ...]:
    """The family's checkpointer lanes, then those installed packages add (plugin lanes whose
    kind is checkpointer): the lanes a graph run or a checkpointer suite is played on."""
    return (*CHECKPOINTER_LANES,
            *(lane for lane in plugin_specs() if KIND.get(lane.name) == "checkpointer"))


def plugin_specs() -> tuple[TargetSpec, ...]:
    """The LangGraph lanes installed packages add (entry-point group
    ``arib.lanes.langgraph``), loaded once per process."""
    from arib.ground.family import plugin_lanes

    found = plugin_lanes("langgraph", frozenset(lane.name for lane in LANES)).loaded
    return tuple(lane for lane in found if isinstance(lane, TargetSpec))


# Which half of the interface each lane's class serves; the other half raises
# NotImplementedError (SqliteSaver's, PostgresSaver's and SqliteStore's async methods) or
# refuses calls from the event loop with asyncio.InvalidStateError (the async classes' sync
# methods, which from another thread run the async half). A class whose sync methods refuse
# from every thread is ``ASYNC_ONLY`` (none of the family's own; third-party savers such as
# AsyncRedisSaver of langgraph-checkpoint-plainredis). Verified on a probe instance of every
# lane (verify_api).
ASYNC_ONLY = "async-only"
API_VALUES = ("sync", "async", "both", ASYNC_ONLY)
_OWN_API: Mapping[str, str] = {
    REFERENCE.name: "both", MEMORY.name: "both", SQLITE_FILE.name: "sync",
    ASYNC_SQLITE_FILE.name: "async", ASYNC_SQLITE_MEMORY.name: "async",
    POSTGRES.name: "sync", POSTGRES_PIPELINE.name: "sync", ASYNC_POSTGRES.name: "async",
    ASYNC_POSTGRES_PIPELINE.name: "async", ASYNC_POSTGRES_POOL.name: "async",
    SHALLOW_POSTGRES.name: "sync", ASYNC_SHALLOW_POSTGRES.name: "async",
    STORE_REFERENCE.name: "both", STORE_MEMORY.name: "both", STORE_SQLITE_FILE.name: "sync",
    STORE_ASYNC_SQLITE_FILE.name: "async", STORE_POSTGRES.name: "both",
    STORE_ASYNC_POSTGRES.name: "async",
}
POSTGRES_LANES = (POSTGRES, POSTGRES_PIPELINE, ASYNC_POSTGRES, ASYNC_POSTGRES_PIPELINE,
                  ASYNC_POSTGRES_POOL, SHALLOW_POSTGRES, ASYNC_SHALLOW_POSTGRES)
CHECKPOINTER_LANES = (REFERENCE, MEMORY, SQLITE_FILE, ASYNC_SQLITE_FILE, ASYNC_SQLITE_MEMORY,
                      *POSTGRES_LANES)
STORE_LANES = (STORE_REFERENCE, STORE_MEMORY, STORE_SQLITE_FILE, STORE_ASYNC_SQLITE_FILE,
               STORE_POSTGRES, STORE_ASYNC_POSTGRES)
LANES = (*CHECKPOINTER_LANES, *STORE_LANES)
# The survey's default lanes besides the family's reference (lg-reference, which the survey
# puts first): every other checkpointer lane and every store lane. Our reference store is one
# of them: it is not the family's reference, and its generated mutants are judged like any
# lane's (store checks are gated on it in admission, ``CheckSpec.reference``).
SURVEY_LANES = (*(lane for lane in CHECKPOINTER_LANES if not lane.reference), *STORE_LANES)
# What each lane's object is: "checkpointer" or "store"; a plugin lane's ``traits["kind"]``.
KIND: Mapping[str, str] = _Declared(
    {**{lane.name: "checkpointer" for lane in CHECKPOINTER_LANES},
     **{lane.name: "store" for lane in STORE_LANES}}, "kind")
# ... and which half each serves; a plugin lane's ``traits["api"]``.
API: Mapping[str, str] = _Declared(_OWN_API, "api")
# Python drivers each lane needs (import names; see arib.targets.langgraph.services.DRIVERS).
_PG_DRIVERS = ("psycopg",)
LANE_DRIVERS: Mapping[str, tuple[str, ...]] = {
    **{lane.name: _PG_DRIVERS for lane in LANES if lane.service == "postgres"},
    ASYNC_POSTGRES_POOL.name: (*_PG_DRIVERS, "psycopg_pool"),
    ASYNC_SQLITE_FILE.name: ("aiosqlite",), ASYNC_SQLITE_MEMORY.name: ("aiosqlite",),
    STORE_ASYNC_SQLITE_FILE.name: ("aiosqlite",),
}


async def read_checkpoints(saver: Any, limit: int | None = None) -> list[Any]:
    """How the family's checks read a saver: every checkpoint tuple it lists, newest first,
    through the half of its interface that its class serves (NotApplicable on a store)."""
    if kind_of(saver) == "store":
        raise NotApplicable(f"the object is {type(saver).__name__}, a store: it keeps no "
                            f"checkpoints")
    if api_of(saver) == "sync":
        return await anyio.to_thread.run_sync(lambda: list(saver.list(None, limit=limit)))
    return [item async for item in saver.alist(None, limit=limit)]


def api_of(saver: Any) -> str:
    """``API`` of the lane whose class ``saver`` is (``both`` for a class no lane names)."""
    for lane in (*LANES, *plugin_specs()):
        if type(saver).__name__ == lane.backend and lane.name in API:
            return API[lane.name]
    return "both"


def is_async(api: str | None) -> bool:
    """Whether a lane of this ``API`` value is called through its async half alone (``async``
    or ``async-only``): the checks branch on this, never on ``== "async"``, so that an
    async-only saver is driven like an async one."""
    return api in ("async", ASYNC_ONLY)


def serves_sync(api: str | None) -> bool:
    """Whether the sync half answers from a worker thread (every value but ``async-only``; a
    lane no table names is taken to serve both)."""
    return api != ASYNC_ONLY


# Savers that keep only a thread's latest checkpoint, by design: reading an earlier one by its
# id, listing a history or travelling back in time was never offered there, so the checks and
# graph runs that need it read only the latest (or abstain), naming this. Verified on the real
# lanes (tests/langgraph/test_lanes.py: two puts, one checkpoint listed).
LATEST_ONLY: Mapping[str, str] = {
    name: f"{name} keeps only the latest checkpoint of a thread (its documented design: "
          f"'only the most recent checkpoint' is stored; deprecated since -postgres 2.0.20)"
    for name in ("ShallowPostgresSaver", "AsyncShallowPostgresSaver")
}


# A plugin lane whose store one process at a time may write, by its database's documented design:
# ``traits["processes"] = "one"`` with ``traits["processes_why"]``, the documentation's words and
# where they are. The checks that fork several writer processes onto one store abstain there,
# with those words, once a writer could not open it beside another (arib.checks.langgraph._writers).
ONE_PROCESS = "one"


def one_process(target: TargetSpec) -> str | None:
    """Why ``target``'s store takes one writing process at a time (its ``processes_why``), or
    None when the lane declares no such limit."""
    if target.traits.get("processes") != ONE_PROCESS:
        return None
    return target.traits.get("processes_why") or None


def _processes_claim(lane: TargetSpec) -> str | None:
    """What is wrong with ``lane``'s ``processes`` trait, or None (absent, or ``one`` with its
    reason)."""
    if "processes" not in lane.traits or one_process(lane):
        return None
    return (f"lane {lane.name!r} declares processes={lane.traits['processes']!r} with "
            f"processes_why={lane.traits.get('processes_why', '')!r}; the rule: the only value "
            f"is {ONE_PROCESS!r}, with the documentation's words in processes_why; fix its "
            f"traits")


def latest_only(saver: Any) -> str | None:
    """Why ``saver`` keeps no history (``LATEST_ONLY``), or None when it keeps every
    checkpoint."""
    return LATEST_ONLY.get(type(saver).__name__)


def kind_of(obj: Any) -> str:
    """What ``obj`` is, found on the object: "checkpointer", "store" or its class name."""
    from langgraph.checkpoint.base import BaseCheckpointSaver

    if isinstance(obj, BaseCheckpointSaver):
        return "checkpointer"
    try:
        from langgraph.store.base import BaseStore
    except ImportError:  # a release before the stores (langgraph-checkpoint 1.0.1) has none
        return type(obj).__name__
    if isinstance(obj, BaseStore):
        return "store"
    return type(obj).__name__


# What the claim probe reads: (sync method, async method, arguments) per kind; a thread and a
# namespace no trial writes, so the answer is None.
_PROBES: Mapping[str, tuple[str, str, tuple[Any, ...]]] = {
    "checkpointer": ("get_tuple", "aget_tuple",
                     ({"configurable": {"thread_id": "arib-claims-probe", "checkpoint_ns": ""}},)),
    "store": ("get", "aget", (("arib-claims-probe",), "probe")),
}


# How long the sync half, called from the event loop's thread, may take to answer or refuse.
SYNC_PROBE_S = 5.0


async def _served(obj: Any, kind: str) -> tuple[str, str]:
    """(what the sync half did, what the async half did), each "ok" or the exception's type
    ("Overdue" when the sync call neither answered nor refused in ``SYNC_PROBE_S``: it does
    not serve the sync half either); the sync call is made from the event loop's own thread."""
    sync_name, async_name, args = _PROBES[kind]
    try:  # some async classes' sync half waits on the loop it blocks (AsyncPostgresStore 2.0.0)
        with alarm_after(SYNC_PROBE_S):
            getattr(obj, sync_name)(*args)
        sync = "ok"
    except Exception as exc:  # noqa: BLE001 - what the half did is the observation
        sync = type(exc).__name__
    try:
        await getattr(obj, async_name)(*args)
        async_ = "ok"
    except Exception as exc:  # noqa: BLE001
        async_ = type(exc).__name__
    return sync, async_


async def _sync_from_thread(obj: Any, kind: str) -> str:
    """What the sync half did called from a worker thread: "ok" or the exception's type
    ("Overdue" when it neither answered nor refused in ``SYNC_PROBE_S``; the thread is
    abandoned)."""
    sync_name, _, args = _PROBES[kind]

    def probe() -> str:
        try:
            getattr(obj, sync_name)(*args)
        except Exception as exc:  # noqa: BLE001 - what the half did is the observation
            return type(exc).__name__
        return "ok"

    with anyio.move_on_after(SYNC_PROBE_S):
        return await anyio.to_thread.run_sync(probe, abandon_on_cancel=True)
    return "Overdue"


# How each half refuses a call it does not serve: the async classes' sync methods, called from
# the event loop, raise asyncio.InvalidStateError; a sync class's async methods raise
# NotImplementedError (BaseCheckpointSaver's and SqliteStore's own). claim -> (what the sync
# half may not do, what the async half may not do) for the claim to be true. An
# ``async-only`` claim is judged apart (``_async_only_false``): its sync half may not answer
# from any thread.
_CONTRADICTS: Mapping[str, tuple[str, str]] = {
    "sync": ("InvalidStateError", "ok"), "async": ("ok", "NotImplementedError"),
    "both": ("InvalidStateError", "NotImplementedError"),
}


def _api_seen(sync: str, async_: str, thread: str | None = None) -> str:
    """The API value the outcomes show, or why they show none (``thread``: the sync half
    called from a worker thread, where it was)."""
    if thread is not None and thread != "ok" and sync != "ok" and async_ == "ok":
        return f"{ASYNC_ONLY!r}"
    if sync == "ok" and async_ == "ok":
        return "'both'"
    if sync == "ok" and async_ == "NotImplementedError":
        return "'sync'"
    if sync == "InvalidStateError" and async_ == "ok":
        return "'async'"
    return f"none of {', '.join(API_VALUES)}"


def _async_only_false(sync: str, thread: str, async_: str) -> bool:
    """Whether the outcomes contradict ``async-only``: a sync call answered (from the loop or
    a worker thread), or the async half refused (NotImplementedError)."""
    return "ok" in (sync, thread) or async_ == "NotImplementedError"


async def verify_api(lane: TargetSpec, obj: Any) -> str | None:
    """The family's ``verify`` hook: ``KIND`` and ``API`` of ``lane`` checked on ``obj`` (a
    probe instance); None when true, else the false claim, naming the lane and the fix.

    False are: ``sync`` when the sync half refuses (InvalidStateError) or the async half
    answers; ``async`` when the sync half, called from the event loop, answers or the async
    half refuses (NotImplementedError); ``both`` when either half refuses; ``async-only`` when
    the sync half answers, from the event loop or from a worker thread, or the async half
    refuses (NotImplementedError); a ``processes`` trait that is not ``one`` with its reason."""
    kind, claim = KIND.get(lane.name), API.get(lane.name)
    fix = "fix KIND and API in targets/langgraph/lanes.py"
    bad_trait = _processes_claim(lane)
    if bad_trait is not None:
        return bad_trait
    if kind is None or claim is None:
        return (f"lane {lane.name!r} has no KIND or API entry (KIND={kind!r}, API={claim!r}); "
                f"the rule: every LangGraph lane says what it is and which half it serves; {fix}")
    if claim not in API_VALUES:
        return (f"lane {lane.name!r} claims API {claim!r}; the rule: API is one of "
                f"{', '.join(API_VALUES)}; {fix}")
    found = kind_of(obj)
    if found != kind:
        return (f"false claim by target {lane.name!r}: KIND says {kind!r} but the object is "
                f"{type(obj).__name__}, a {found}; {fix}")
    sync, async_ = await _served(obj, kind)
    sync_name, async_name, _ = _PROBES[kind]
    if claim == ASYNC_ONLY:
        thread = await _sync_from_thread(obj, kind)
        if not _async_only_false(sync, thread, async_):
            return None
        return (f"false claim by target {lane.name!r}: API says {claim!r} but on "
                f"{type(obj).__name__}, {sync_name}() from the event loop gave {sync}, from a "
                f"worker thread gave {thread} and {async_name}() gave {async_} (which is "
                f"{_api_seen(sync, async_, thread)}); {fix}")
    # Another exception (a backend that fails every call, e.g. a forced-broken mutant) says
    # nothing of which half the class serves: the checks judge that failure, not this claim.
    no_sync, no_async = _CONTRADICTS[claim]
    if sync != no_sync and async_ != no_async:
        return None
    return (f"false claim by target {lane.name!r}: API says {claim!r} but on "
            f"{type(obj).__name__}, {sync_name}() from the event loop gave {sync} and "
            f"{async_name}() gave {async_} (which is {_api_seen(sync, async_)}); {fix}")
