"""Third-party LangGraph checkpointers as lanes: DuckDB, LMDB and plain Redis savers.

Each lane is built as the package's README builds its saver, on a store of the trial:

- ``langgraph-checkpoint-duckdb`` (2.0.2): ``DuckDBSaver(conn)`` / ``AsyncDuckDBSaver(conn)`` on
  ``duckdb.connect(<trial root>/checkpoints.duckdb)``, then ``setup()`` (its README: "make sure
  to call .setup()"); dispose closes the connection. A second build on the same root connects to
  the same file (DuckDB shares one database per file within a process). DuckDB documents one
  writing process per database file (``DUCKDB_ONE_WRITER``, its own words), so both lanes
  declare ``processes=one``: checks forking several writer processes onto one store abstain
  there, with those words, once a second process could not open the file.
- ``langgraph-checkpoint-lmdb`` (0.3.1): ``LMDBSaver(env)`` / ``AsyncLMDBSaver(env)`` on
  ``lmdb.open(<trial root>/checkpoints.lmdb, max_dbs=10)`` (its README's quick start). LMDB's
  rule is one environment per file per process, so every build on a root in one process shares
  that environment (the package keeps one lock per environment object); it is closed when the
  last handle on it is disposed. The async saver's thread pool is shut down on dispose.
- ``langgraph-checkpoint-plainredis`` (0.1.0): ``RedisSaver(url=...)`` /
  ``AsyncRedisSaver(url=...)`` on the harness's Redis (``TargetSpec.service="redis"``), each
  trial's store under a key prefix of its own (``prefix=``, documented: "key namespace"); a
  second build on the same root uses the same prefix. Dispose calls ``close()`` / ``aclose()``
  (documented: "call it on shutdown").

What a lane says of itself beside its claims (``traits``): ``kind`` (checkpointer), ``api``
(which half of the saver interface its class serves; ``async-only`` for the two async savers
whose sync methods refuse from every thread, as their packages say: plainredis's module
docstring, "each one raises a pointer to the other if you use the wrong one"; lmdb's README,
"synchronous (`LMDBSaver`) and non-blocking asynchronous (`AsyncLMDBSaver`) implementations",
AsyncLMDBSaver defining no sync method, so BaseCheckpointSaver's raise NotImplementedError)
and, for a saver on a file that
``from_conn_string`` opens, ``store=file`` and ``store_file`` (the file the builder set up);
the family verifies kind and api on the object (arib.targets.langgraph.lanes.verify_api), and
the claims (has_close ...) like any lane's.
Nothing here imports a backend package until a lane is built.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import os
import secrets
from collections.abc import Awaitable, Callable
from typing import Any

from arib.ground.services import redis_keys
from arib.targets.base import BuildContext, Claims, Handle, TargetSpec
from arib.targets.net import service_url
from arib_ecosystem.langgraph_mysql import LANES as MYSQL_LANES

DUCKDB = "langgraph-checkpoint-duckdb"
LMDB = "langgraph-checkpoint-lmdb"
PLAINREDIS = "langgraph-checkpoint-plainredis"
DUCKDB_MODULE = "langgraph.checkpoint.duckdb"
DUCKDB_ASYNC_MODULE = "langgraph.checkpoint.duckdb.aio"
DUCKDB_FILE = "checkpoints.duckdb"
# DuckDB's concurrency model, in its documentation's words (the installed duckdb is 2.0.1).
DUCKDB_ONE_WRITER = (
    "DuckDB's documentation, Concurrency (https://duckdb.org/docs/2.0/connect/concurrency.html):"
    " \"Read-write mode: one process can both read and write to the database.\" and \"When "
    "using read-write mode, DuckDB supports multiple writer threads using a combination of MVCC "
    "(Multi-Version Concurrency Control) and optimistic concurrency control (see Concurrency "
    "within a Single Process), but all within that single writer process.\"")
LMDB_MODULE = "langgraph_checkpoint_lmdb.lmdb"
PLAINREDIS_MODULE = "langgraph_checkpoint_plainredis.saver"
# Distinguishes this process's Redis prefixes from those of earlier runs.
_RUN_TOKEN = secrets.token_hex(4)

Builder = Callable[[BuildContext], Awaitable[Handle]]


def _class(module: str, name: str) -> Any:
    """``name`` of ``module``, looked up now (a mutated module is the one a run imported)."""
    return getattr(importlib.import_module(module), name)


# --------------------------------------------------------------------------- DuckDB


def _duckdb_builder(module: str, name: str, is_async: bool) -> Builder:
    """A builder of ``name`` on a DuckDB connection to the trial's file, set up."""

    async def build(ctx: BuildContext) -> Handle:
        import duckdb

        conn = duckdb.connect(str(ctx.root / DUCKDB_FILE))
        try:
            saver = _class(module, name)(conn)
            if is_async:
                await saver.setup()
            else:
                saver.setup()
        except BaseException:
            conn.close()
            raise

        async def dispose() -> None:
            with contextlib.suppress(Exception):  # disposal: the trial is over
                conn.close()

        return Handle(session=saver, reopen=lambda: build(ctx), dispose=dispose)

    return build


# --------------------------------------------------------------------------- LMDB

# (process id, path) -> [environment, open handles]: LMDB allows one environment per file per
# process; a forked child opens its own.
_ENVIRONMENTS: dict[tuple[int, str], list[Any]] = {}


def _lmdb_env(path: str) -> Any:
    import lmdb

    key = (os.getpid(), path)
    entry = _ENVIRONMENTS.get(key)
    if entry is None:
        entry = _ENVIRONMENTS[key] = [lmdb.open(path, max_dbs=10), 0]
    entry[1] += 1
    return entry[0]


def _lmdb_release(path: str) -> None:
    key = (os.getpid(), path)
    entry = _ENVIRONMENTS.get(key)
    if entry is None:
        return
    entry[1] -= 1
    if entry[1] <= 0:
        del _ENVIRONMENTS[key]
        with contextlib.suppress(Exception):
            entry[0].close()


def _lmdb_builder(name: str) -> Builder:
    """A builder of ``name`` (LMDBSaver or AsyncLMDBSaver) on the trial's environment."""

    async def build(ctx: BuildContext) -> Handle:
        path = str(ctx.root / "checkpoints.lmdb")
        env = _lmdb_env(path)
        try:
            saver = _class(LMDB_MODULE, name)(env)
        except BaseException:
            _lmdb_release(path)
            raise

        async def dispose() -> None:
            executor = getattr(saver, "executor", None)
            if executor is not None:
                executor.shutdown(wait=False)
            _lmdb_release(path)

        return Handle(session=saver, reopen=lambda: build(ctx), dispose=dispose)

    return build


# --------------------------------------------------------------------------- plain Redis


def redis_prefix(ctx: BuildContext) -> str:
    """The key prefix of this trial's store: the same for every build on ``ctx.root``, under
    the run's id on a user's own Redis (arib.ground.services.redis_keys)."""
    tag = hashlib.sha256(f"{_RUN_TOKEN}\0{ctx.root}".encode()).hexdigest()[:12]
    return redis_keys.key_prefix(f"lg-plainredis:{tag}")


def _plainredis_builder(lane: str, name: str, is_async: bool) -> Builder:
    """A builder of ``name`` (RedisSaver or AsyncRedisSaver) on the harness's Redis."""

    async def build(ctx: BuildContext) -> Handle:
        url = service_url(ctx, "redis", lane)
        saver = _class(PLAINREDIS_MODULE, name)(url=url, prefix=redis_prefix(ctx))

        async def dispose() -> None:
            with contextlib.suppress(Exception):  # disposal: the trial is over
                if is_async:
                    await saver.aclose()
                else:
                    saver.close()
            if redis_keys.run_id() is not None:
                with contextlib.suppress(Exception):
                    await redis_keys.expire_trial_keys(url, redis_prefix(ctx))

        return Handle(session=saver, reopen=lambda: build(ctx), dispose=dispose)

    return build


# --------------------------------------------------------------------------- lanes

NO_CLOSE = Claims(has_close=False)


def _lane(name: str, backend: str, module: str, distribution: str, build: Builder,
          description: str, *, api: str, claims: Claims = NO_CLOSE, service: str | None = None,
          on_file: bool = False, one_writer_process: str = "") -> TargetSpec:
    # on a file: from_conn_string opens the one the builder made and set up (DuckDB's savers
    # make no tables before setup(), which their README says the user MUST call)
    traits = {"kind": "checkpointer", "api": api,
              **({"store": "file", "store_file": DUCKDB_FILE} if on_file else {}),
              **({"processes": "one", "processes_why": one_writer_process}
                 if one_writer_process else {})}
    return TargetSpec(name=name, backend=backend, module=module, claims=claims, build=build,
                      description=description, service=service, distribution=distribution,
                      traits=traits)


LANES: tuple[TargetSpec, ...] = (
    _lane("lg-duckdb", "DuckDBSaver", DUCKDB_MODULE, DUCKDB,
          _duckdb_builder(DUCKDB_MODULE, "DuckDBSaver", is_async=False),
          f"DuckDBSaver ({DUCKDB}) on a duckdb connection to a file, setup() run",
          api="sync", on_file=True, one_writer_process=DUCKDB_ONE_WRITER),
    _lane("lg-duckdb-async", "AsyncDuckDBSaver", DUCKDB_ASYNC_MODULE, DUCKDB,
          _duckdb_builder(DUCKDB_ASYNC_MODULE, "AsyncDuckDBSaver", is_async=True),
          f"AsyncDuckDBSaver ({DUCKDB}) on a duckdb connection to a file, setup() run",
          api="async", on_file=True, one_writer_process=DUCKDB_ONE_WRITER),
    _lane("lg-lmdb", "LMDBSaver", LMDB_MODULE, LMDB, _lmdb_builder("LMDBSaver"),
          f"LMDBSaver ({LMDB}) on lmdb.open(file, max_dbs=10), one environment per process",
          api="sync"),
    _lane("lg-lmdb-async", "AsyncLMDBSaver", LMDB_MODULE, LMDB, _lmdb_builder("AsyncLMDBSaver"),
          f"AsyncLMDBSaver ({LMDB}) on lmdb.open(file, max_dbs=10), its own thread pool",
          api="async-only"),
    _lane("lg-plainredis", "RedisSaver", PLAINREDIS_MODULE, PLAINREDIS,
          _plainredis_builder("lg-plainredis", "RedisSaver", is_async=False),
          f"RedisSaver ({PLAINREDIS}) on the harness's Redis, one key prefix per trial",
          api="sync", claims=Claims(has_close=True), service="redis"),
    _lane("lg-plainredis-async", "AsyncRedisSaver", PLAINREDIS_MODULE, PLAINREDIS,
          _plainredis_builder("lg-plainredis-async", "AsyncRedisSaver", is_async=True),
          f"AsyncRedisSaver ({PLAINREDIS}) on the harness's Redis, one key prefix per trial "
          f"(aclose(), no close())", api="async-only", service="redis"),
    *MYSQL_LANES,
)
