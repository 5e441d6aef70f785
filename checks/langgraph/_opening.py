"""Opening a lane's saver class the documented quick way, ``from_conn_string``, on a store of
the trial (ARIB-LGCLOSE-001, ARIB-LGHANG-001).

The packages' own context managers: ``SqliteSaver.from_conn_string(path)`` (sync),
``AsyncSqliteSaver.from_conn_string(path)`` (async), ``PostgresSaver`` / ``AsyncPostgresSaver``
and the Shallow savers' ``from_conn_string(conninfo)`` (one connection each, no pipe, no pool:
what the quick start and most servers use), our reference's on a file. Each exits by closing
what it opened. Which string names the trial's store: a file of the trial's folder, ``:memory:``
for a lane whose store lives in its one connection, or the trial's own schema on the harness's
PostgreSQL (its tables made by the caller's ``setup()``).
"""

from __future__ import annotations

from typing import Any

import anyio.to_thread

from arib.targets.base import BuildContext, NotApplicable, TargetSpec


async def enter(cm: Any) -> Any:
    """Enter a context manager, async or sync."""
    if hasattr(cm, "__aenter__"):
        return await cm.__aenter__()
    return cm.__enter__()


async def leave(cm: Any, in_thread: bool = False) -> None:
    """Exit a context manager (with no exception), async or sync (in a thread if asked)."""
    if hasattr(cm, "__aexit__"):
        await cm.__aexit__(None, None, None)
    elif in_thread:
        await anyio.to_thread.run_sync(cm.__exit__, None, None, None)
    else:
        cm.__exit__(None, None, None)


def schema_conninfo(build: BuildContext, lane: str) -> str:
    """The libpq connection string of ``build``'s schema on the harness's PostgreSQL (made if
    missing)."""
    from psycopg.conninfo import make_conninfo

    from arib.targets.langgraph.services import conninfo, ensure_schema, trial_schema

    dsn, schema = conninfo(build, lane), trial_schema(build)
    ensure_schema(dsn, schema)
    return make_conninfo(dsn, options=f"-c search_path={schema}")


def on_server(target: TargetSpec, cls: type) -> bool:
    """Whether ``cls`` (the lane's saver class) keeps its store on a server, not in a file
    (a plugin lane's ``traits["store"] == "file"`` says it takes a file path)."""
    if target.traits.get("store") == "file":
        return False
    return not (target.reference or "sqlite" in cls.__module__)


def conn_string(target: TargetSpec, cls: type, build: BuildContext, *, private: bool = False,
                filename: str = "from-conn-string.db") -> str:
    """What ``cls.from_conn_string`` takes to open ``build``'s store: a file of its folder
    (``:memory:`` on a lane whose store is ``private`` to its connection), or its schema on the
    harness's PostgreSQL. NotApplicable naming the class when it has no ``from_conn_string``
    or keeps its store where the harness cannot name it."""
    if not callable(getattr(cls, "from_conn_string", None)):
        raise NotApplicable(f"{cls.__name__} of lane {target.name!r} has no from_conn_string")
    if not on_server(target, cls):
        # a plugin lane's saver that needs its setup() opens the file its builder set up
        return ":memory:" if private else str(build.root / target.traits.get("store_file",
                                                                             filename))
    if target.service != "postgres":
        raise NotApplicable(f"{cls.__module__}.{cls.__name__} of lane {target.name!r} takes "
                            f"neither a SQLite file nor the harness's PostgreSQL")
    return schema_conninfo(build, target.name)
