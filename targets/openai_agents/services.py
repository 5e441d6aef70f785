"""Adapters for the openai-agents backends that need a server or an extra package.

Redis and PostgreSQL lanes read their server URL from ``ctx.services`` (filled from
``arib.ground.services.ServiceManager.services``); every trial gets its own store on that server
(a Redis key prefix, or a pair of PostgreSQL tables, derived from the trial's root), and
``reopen()`` opens a fresh instance on the same store. The encrypted lanes need no server,
only ``cryptography``. MongoDB and Dapr are listed as not measured, with the reason.

Facts verified in openai-agents 0.24.0 source (agents/extensions/memory/):
- ``RedisSession.close`` is ``async``. From ``from_url`` the session owns its client: close
  releases it and the session becomes terminal (later operations raise RuntimeError). With an
  injected ``redis_client`` close() is documented as a no-op: the caller owns the client and
  the session stays usable.
- ``SQLAlchemySession`` has no ``close()``; the caller disposes ``session.engine``.
- ``EncryptedSession`` forwards unknown attributes to the wrapped session, so it has the
  wrapped session's ``close`` (sync for SQLiteSession) or none (SQLAlchemySession).
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import inspect
import secrets
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import urlsplit

from arib.ground.errors import ServiceError
from arib.ground.services import (
    NotMeasured,
    ServiceManager,
    missing_python_driver,
    redis_keys,
    redis_probe,
)
from arib.targets.base import (
    BuildContext,
    Claims,
    FixedGuard,
    Handle,
    NotApplicable,
    TargetSpec,
    quiet_close,
)
from arib.targets.net import require_tcp, service_url
from arib.targets.openai_agents.rows import (
    NOT_JSON,
    PLAINTEXT,
    RowWriter,
    redis_list_writer,
    sqlite_row_writer,
)
from arib.targets.openai_agents.sdk import (
    SQLALCHEMY_RETRY_NOTE,
    SQLALCHEMY_SQLITE_DRIVER,
    SQLITE_BUSY_TIMEOUT_S,
    SQLITE_MODULE,
)

REDIS_MODULE = "agents.extensions.memory.redis_session"
SQLALCHEMY_MODULE = "agents.extensions.memory.sqlalchemy_session"
ENCRYPT_MODULE = "agents.extensions.memory.encrypt_session"

# A fixed, public test key (32 bytes, urlsafe base64 as Fernet keys are): not a secret.
TEST_ENCRYPTION_KEY = base64.urlsafe_b64encode(b"arib-fixed-test-key-not-secret!!").decode()
# Long enough that no item written during a run expires (EncryptedSession hides older ones).
ENCRYPTION_TTL_S = 3600
# Distinguishes this process's stores from those of earlier runs on an external server.
_RUN_TOKEN = secrets.token_hex(4)
# The stores under the encrypted lanes are SQLite files: SQLiteSession's connections and
# SQLAlchemySession's set a 5 s busy timeout (see
# arib.targets.openai_agents.sdk.SQLITE_BUSY_TIMEOUT_S). Redis commands never wait for a lock, and
# PostgreSQL waits for a row lock without limit (lock_timeout = 0 by default, and the SDK sets no
# lock_timeout or command_timeout), so those lanes have no finite wait: a transaction a mutant
# leaves open hangs the next writer until the mutant's time limit, and that is reported as a
# timeout.
ENCRYPTED_WAITS_S = SQLITE_BUSY_TIMEOUT_S


# --------------------------------------------------------------------------- helpers


def trial_tag(ctx: BuildContext) -> str:
    """A short id of this trial's store: the same for every instance opened with ``ctx``."""
    digest = hashlib.sha256(f"{_RUN_TOKEN}\0{ctx.root}".encode()).hexdigest()
    return digest[:12]


def _require_redis(url: str, lane: str) -> None:
    """Fail the build (not the trial) when the Redis server is gone."""
    try:
        redis_probe(url, timeout=2.0)
    except (OSError, RuntimeError) as exc:
        parts = urlsplit(url)
        raise ServiceError(
            f"target {lane!r}: the Redis server at {parts.hostname}:{parts.port} does not "
            f"answer PING ({type(exc).__name__}: {exc}); the rule: a lane is built only on a "
            f"live server; fix: check that the server is still running "
            f"(ServiceManager.check('redis')) and restart the run"
        ) from exc


async def _dispose_engine(session: Any) -> None:
    engine = getattr(session, "engine", None) or getattr(session, "_engine", None)
    if engine is not None:
        with contextlib.suppress(Exception):
            await engine.dispose()





def _handle(
    ctx: BuildContext,
    session: Any,
    build: Callable[[BuildContext], Awaitable[Handle]],
    dispose: Callable[[], Awaitable[None]],
    write_undecodable: RowWriter | None = None,
) -> Handle:
    async def reopen() -> Handle:
        return await build(ctx)

    return Handle(session=session, reopen=reopen, dispose=dispose,
                  write_undecodable=write_undecodable)


def _encrypted_rows(ctx: BuildContext) -> RowWriter:
    """Rows EncryptedSession skips, in the wrapped session's table of the trial's store file:
    plaintext items (no envelope) and rows that are not JSON at all."""
    return sqlite_row_writer(ctx.root / "store.db", "agent_messages",
                             ("session_id", "message_data"), ctx.session_id,
                             kinds=(*PLAINTEXT, *NOT_JSON))


# --------------------------------------------------------------------------- builders


def redis_key_prefix(ctx: BuildContext) -> str:
    """The Redis key prefix of this trial's store (under the run's id on a user's Redis:
    arib.ground.services.redis_keys)."""
    return redis_keys.key_prefix(trial_tag(ctx))


async def _expire_on_users_redis(ctx: BuildContext, url: str) -> None:
    """On a user's Redis (REDIS_URL), give the trial's keys an expiry as its store is disposed
    (the run deletes them at its end); nothing on the harness's own server."""
    if redis_keys.run_id() is not None:
        with contextlib.suppress(Exception):  # disposal: the trial is over, not evidence
            await redis_keys.expire_trial_keys(url, redis_key_prefix(ctx))


def _redis_rows(ctx: BuildContext, url: str) -> RowWriter:
    """Elements RedisSession skips, pushed onto the session's messages list (the key layout
    ``<key_prefix>:<session_id>:messages`` of openai-agents 0.24.0) by a client of our own:
    text that is not JSON and bytes that are not UTF-8."""
    return redis_list_writer(url, f"{redis_key_prefix(ctx)}:{ctx.session_id}:messages")


# RedisSession's documented constructor keywords the Redis builders pass on.
REDIS_OPTIONS = {
    "ttl": "RedisSession.__init__ docstring, openai-agents 0.24.0: ttl (int | None), "
           "time-to-live in seconds for session data; None: data persists indefinitely "
           "(from_url forwards it: 'e.g., key_prefix, ttl')",
}


async def _build_redis_from_url(ctx: BuildContext) -> Handle:
    from agents.extensions.memory import redis_session

    url = service_url(ctx, "redis", "redis-from-url")
    _require_redis(url, "redis-from-url")
    session = redis_session.RedisSession.from_url(
        ctx.session_id, url=url, key_prefix=redis_key_prefix(ctx), ttl=ctx.options.get("ttl")
    )

    async def dispose() -> None:
        await quiet_close(session)
        await _expire_on_users_redis(ctx, url)

    return _handle(ctx, session, _build_redis_from_url, dispose, _redis_rows(ctx, url))


async def _build_redis_injected(ctx: BuildContext) -> Handle:
    import redis.asyncio as redis_asyncio
    from agents.extensions.memory import redis_session

    url = service_url(ctx, "redis", "redis-injected-client")
    _require_redis(url, "redis-injected-client")
    client = redis_asyncio.from_url(url)  # owned by this adapter, not by the session
    session = redis_session.RedisSession(
        ctx.session_id, redis_client=client, key_prefix=redis_key_prefix(ctx),
        ttl=ctx.options.get("ttl"),
    )

    async def dispose() -> None:
        await quiet_close(session)  # documented no-op for an injected client
        with contextlib.suppress(Exception):
            await client.aclose()
        await _expire_on_users_redis(ctx, url)

    return _handle(ctx, session, _build_redis_injected, dispose, _redis_rows(ctx, url))


def postgres_tables(ctx: BuildContext) -> tuple[str, str]:
    """(sessions table, messages table) of this trial's store."""
    tag = trial_tag(ctx)
    return f"arib_s_{tag}", f"arib_m_{tag}"


async def _build_sqlalchemy_postgres(ctx: BuildContext) -> Handle:
    from agents.extensions.memory import sqlalchemy_session

    url = service_url(ctx, "postgres", "sqlalchemy-postgres")
    require_tcp(url, "sqlalchemy-postgres", "postgres")
    sessions_table, messages_table = postgres_tables(ctx)
    session = sqlalchemy_session.SQLAlchemySession.from_url(
        ctx.session_id, url=url, create_tables=True,
        sessions_table=sessions_table, messages_table=messages_table,
    )

    async def dispose() -> None:
        await _dispose_engine(session)

    return _handle(ctx, session, _build_sqlalchemy_postgres, dispose)


# EncryptedSession's documented constructor keywords the encrypted lanes pass on from
# BuildContext.options (openai-agents 0.24.0, EncryptedSession.__init__ docstring).
ENCRYPTED_OPTIONS = {
    "encryption_key": "EncryptedSession.__init__: 'encryption_key: High-entropy master key, "
                      "such as Fernet.generate_key().decode(\"ascii\") ... reuse the same key "
                      "and session_id to read persisted data after a restart'",
    "max_scan_items": "EncryptedSession.__init__: 'max_scan_items: Positive per-read item "
                      "budget, or None for unlimited work (the default)'",
}


def _encrypted_options(ctx: BuildContext) -> dict[str, Any]:
    """EncryptedSession's keyword arguments for this trial: the fixed test key unless the
    trial gives ``encryption_key``, the lane's TTL, and the trial's other options; one this
    SDK's constructor lacks: NotApplicable (checked before anything is opened)."""
    from agents.extensions.memory import encrypt_session

    options = {"encryption_key": TEST_ENCRYPTION_KEY, "ttl": ENCRYPTION_TTL_S, **ctx.options}
    takes = inspect.signature(encrypt_session.EncryptedSession).parameters
    missing = sorted(name for name in options if name not in takes)
    if missing:
        raise NotApplicable(f"EncryptedSession of this openai-agents version takes no "
                            f"constructor keyword {', '.join(map(repr, missing))}")
    return options


async def _build_encrypted_sqlite(ctx: BuildContext) -> Handle:
    from agents.extensions.memory import encrypt_session
    from agents.memory import sqlite_session

    options = _encrypted_options(ctx)
    inner = sqlite_session.SQLiteSession(ctx.session_id, db_path=str(ctx.root / "store.db"))
    session = encrypt_session.EncryptedSession(ctx.session_id, inner, **options)

    async def dispose() -> None:
        await quiet_close(inner)

    return _handle(ctx, session, _build_encrypted_sqlite, dispose, _encrypted_rows(ctx))


async def _build_encrypted_sqlalchemy(ctx: BuildContext) -> Handle:
    from agents.extensions.memory import encrypt_session, sqlalchemy_session

    options = _encrypted_options(ctx)
    inner = sqlalchemy_session.SQLAlchemySession.from_url(
        ctx.session_id, url=f"sqlite+aiosqlite:///{ctx.root / 'store.db'}", create_tables=True
    )
    session = encrypt_session.EncryptedSession(ctx.session_id, inner, **options)

    async def dispose() -> None:
        await _dispose_engine(inner)

    return _handle(ctx, session, _build_encrypted_sqlalchemy, dispose, _encrypted_rows(ctx))


# --------------------------------------------------------------------------- the lanes

REDIS_FROM_URL = TargetSpec(
    name="redis-from-url",
    backend="RedisSession",
    module=REDIS_MODULE,
    claims=Claims(has_close=True, close_is_async=True, close_is_terminal=True),
    build=_build_redis_from_url,
    description="RedisSession.from_url on a real redis-server; owns its client; async close() "
                "releases it and ends the session; one key prefix per trial",
    service="redis",
    options=REDIS_OPTIONS,
    preload=("redis.asyncio",),
)

REDIS_INJECTED_CLIENT = TargetSpec(
    name="redis-injected-client",
    backend="RedisSession",
    module=REDIS_MODULE,
    claims=Claims(
        has_close=True, close_is_async=True, close_is_terminal=False,
        close_note="RedisSession.close() docstring, openai-agents 0.24.0: with an injected "
                   "client the caller manages its lifecycle and close() is a no-op",
    ),
    build=_build_redis_injected,
    description="RedisSession(redis_client=...) with a client the caller owns; documented: "
                "async close() is a no-op that neither closes the client nor ends the session "
                "(a 'closed session refuses writes' check does not apply); the adapter closes "
                "the client at dispose; one key prefix per trial",
    service="redis",
    options=REDIS_OPTIONS,
    preload=("redis.asyncio",),
)

SQLALCHEMY_POSTGRES = TargetSpec(
    name="sqlalchemy-postgres",
    backend="SQLAlchemySession",
    module=SQLALCHEMY_MODULE,
    claims=Claims(has_close=False),
    build=_build_sqlalchemy_postgres,
    description="SQLAlchemySession.from_url(postgresql+asyncpg) on a real PostgreSQL; no "
                "close(), the caller disposes the engine; one pair of tables per trial",
    service="postgres",
    fixed_guards=(
        FixedGuard('self._engine.dialect.name != "sqlite"', True,
                   "the engine is postgresql+asyncpg"),
        FixedGuard('self._engine.dialect.name == "sqlite"', False,
                   "the engine is postgresql+asyncpg"),
        FixedGuard("self._engine.dialect.delete_returning", True,
                   "PostgreSQL has DELETE ... RETURNING and SQLAlchemy's dialect says so"),
    ),
    preload=("sqlalchemy.ext.asyncio", "sqlalchemy.dialects.postgresql.asyncpg"),
)

ENCRYPTED_SQLITE = TargetSpec(
    name="encrypted-sqlite",
    backend="EncryptedSession",
    module=ENCRYPT_MODULE,
    claims=Claims(has_close=True, close_is_async=False),
    build=_build_encrypted_sqlite,
    description=f"EncryptedSession(ttl={ENCRYPTION_TTL_S}, fixed test key) over SQLiteSession "
                f"on a file; close() is the wrapped SQLiteSession's (sync), forwarded",
    waits_s=ENCRYPTED_WAITS_S,
    options=ENCRYPTED_OPTIONS,
    preload=(SQLITE_MODULE,),
)

ENCRYPTED_SQLALCHEMY_SQLITE = TargetSpec(
    name="encrypted-sqlalchemy-sqlite",
    backend="EncryptedSession",
    module=ENCRYPT_MODULE,
    claims=Claims(has_close=False, retries_lock_errors=True,
                  retry_note="EncryptedSession forwards every write to the wrapped "
                             "SQLAlchemySession, which retries: " + SQLALCHEMY_RETRY_NOTE),
    build=_build_encrypted_sqlalchemy,
    description=f"EncryptedSession(ttl={ENCRYPTION_TTL_S}, fixed test key) over "
                f"SQLAlchemySession(sqlite+aiosqlite file); no close(), engine disposed",
    waits_s=ENCRYPTED_WAITS_S,
    options=ENCRYPTED_OPTIONS,
    preload=(SQLALCHEMY_MODULE, *SQLALCHEMY_SQLITE_DRIVER),
)

SERVICE_TARGETS: tuple[TargetSpec, ...] = (
    REDIS_FROM_URL, REDIS_INJECTED_CLIENT, SQLALCHEMY_POSTGRES,
    ENCRYPTED_SQLITE, ENCRYPTED_SQLALCHEMY_SQLITE,
)

# Python packages each lane needs beyond the project's own dependencies (see DRIVERS).
LANE_DRIVERS: dict[str, tuple[str, ...]] = {
    "redis-from-url": ("redis",),
    "redis-injected-client": ("redis",),
    "sqlalchemy-postgres": ("asyncpg",),
    "encrypted-sqlite": ("cryptography",),
    "encrypted-sqlalchemy-sqlite": ("cryptography",),
}

NOT_MEASURED: tuple[NotMeasured, ...] = (
    NotMeasured(
        "mongodb",
        "not measured: MongoDBSession needs a MongoDB server (mongod) and none can run here: "
        "Debian 12 ships no MongoDB server package (apt-cache policy mongodb mongodb-server: "
        "no candidate; only client drivers are packaged), and the PyPI and npm helpers "
        "(pymongo-inmemory, mongodb-memory-server) download mongod from MongoDB's own site at "
        "run time, which this machine cannot reach",
    ),
    NotMeasured(
        "dapr",
        "not measured: DaprSession talks over gRPC to a Dapr sidecar (daprd) with a state-store "
        "component; the 'dapr' PyPI package is only the client SDK, daprd is in no reachable "
        "registry (apt-cache search dapr: nothing; no PyPI or npm package ships it), and "
        "'dapr init' downloads it from GitHub releases, which this machine cannot reach",
    ),
)


def lane_availability(spec: TargetSpec, manager: ServiceManager) -> NotMeasured | None:
    """NotMeasured (with the lane's name) when a driver or the server of ``spec`` is missing."""
    for driver in LANE_DRIVERS.get(spec.name, ()):
        missing = missing_python_driver(driver)
        if missing is not None:
            return NotMeasured(spec.name, missing.reason)
    if spec.service is not None:
        missing = manager.availability(spec.service)
        if missing is not None:
            return NotMeasured(spec.name, missing.reason)
    return None
