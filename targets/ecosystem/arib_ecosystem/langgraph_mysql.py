"""A third-party LangGraph checkpointer on MySQL, as a lane: ``lg-mysql``.

``langgraph-checkpoint-mysql`` (3.0.0, module ``langgraph.checkpoint.mysql.pymysql``; its pymysql
driver from the ``pymysql`` extra) on the harness's throwaway MariaDB
(``TargetSpec.service="mysql"``, arib.ground.services.mariadb_server). The saver is built as the
package documents it: ``PyMySQLSaver(conn)`` on a pymysql connection opened with
``autocommit=True`` (what its ``from_conn_string`` opens), then ``setup()`` (its docstring: it
"MUST be called directly by the user the first time checkpointer is used"). Every trial gets a
database of its own (``lg_<12 hex>``, from the trial's root), created on build; a second build on
the same root connects to the same database, and dispose closes what the build opened. A
throwaway server takes the databases with it; on a server named by MYSQL_URL they stay.

Facts read in the installed package: ``PyMySQLSaver`` has no ``close()`` (the caller owns the
connection); it serves the sync half of the saver interface (its async methods are
BaseCheckpointSaver's, which raise NotImplementedError); its writes on one connection are
serialized by a ``threading.Lock`` of the saver. ``PyMySQLSaver`` itself only binds the driver
(its module has nothing to mutate); the saver's code is in its two base classes, which the lane
names to mutate (``mutated_also``): the survey reports them as ``lg-mysql[BaseSyncMySQLSaver]``
(the queries and the lock) and ``lg-mysql[BaseMySQLSaver]`` (migrations, loading). This
module's ``LANES`` is merged into ``arib_ecosystem.langgraph.LANES`` (entry point
``arib.lanes.langgraph``).
"""

from __future__ import annotations

import hashlib
import importlib
import secrets
from typing import Any
from urllib.parse import unquote, urlsplit

from arib.ground.services import mysql_database_url
from arib.targets.base import BuildContext, Claims, Handle, TargetSpec
from arib.targets.net import require_tcp, service_url

DISTRIBUTION = "langgraph-checkpoint-mysql"
PYMYSQL_MODULE = "langgraph.checkpoint.mysql.pymysql"
NAME = "lg-mysql"
# Distinguishes this process's databases from those of earlier runs on a user's server.
_RUN_TOKEN = secrets.token_hex(4)


def trial_database(ctx: BuildContext) -> str:
    """The database of this trial's store: the same for every build on ``ctx.root``."""
    digest = hashlib.sha256(f"{_RUN_TOKEN}\0{ctx.root}".encode()).hexdigest()
    return f"lg_{digest[:12]}"


def connect(ctx: BuildContext) -> Any:
    """A pymysql connection (autocommit) to this trial's database, created if needed."""
    import pymysql

    url = service_url(ctx, "mysql", NAME)
    require_tcp(url, NAME, "mysql")
    parts = urlsplit(mysql_database_url(url, trial_database(ctx)))
    return pymysql.connect(host=parts.hostname, port=parts.port or 3306,
                           user=unquote(parts.username or ""),
                           password=unquote(parts.password or ""),
                           database=parts.path.strip("/"), autocommit=True)


async def build_pymysql(ctx: BuildContext) -> Handle:
    """PyMySQLSaver on a connection of its own to the trial's database, set up."""
    conn = connect(ctx)
    try:
        saver = importlib.import_module(PYMYSQL_MODULE).PyMySQLSaver(conn)
        saver.setup()
    except BaseException:
        conn.close()
        raise

    async def dispose() -> None:
        try:
            conn.close()
        except Exception:  # noqa: BLE001 - disposal: the trial is over, not evidence
            pass

    async def reopen() -> Handle:
        return await build_pymysql(ctx)

    return Handle(session=saver, reopen=reopen, dispose=dispose)


MYSQL = TargetSpec(
    name=NAME,
    backend="PyMySQLSaver",
    module=PYMYSQL_MODULE,
    claims=Claims(has_close=False),
    build=build_pymysql,
    description="langgraph-checkpoint-mysql PyMySQLSaver on a pymysql connection (autocommit, "
                "as from_conn_string opens it) to the harness's throwaway MariaDB, one database "
                "per trial",
    service="mysql",
    # InnoDB waits this long for a row lock another connection holds (innodb_lock_wait_timeout,
    # 50 s by default in MariaDB 10.11), then fails the statement.
    waits_s=50.0,
    distribution=DISTRIBUTION,
    traits={"kind": "checkpointer", "api": "sync"},
    mutated_also=("langgraph.checkpoint.mysql:BaseSyncMySQLSaver",
                  "langgraph.checkpoint.mysql.base:BaseMySQLSaver"),
)

LANES: tuple[TargetSpec, ...] = (MYSQL,)
