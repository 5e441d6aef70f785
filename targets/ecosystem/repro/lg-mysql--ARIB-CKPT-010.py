"""ARIB-CKPT-010 on lg-mysql, outside the harness: PyMySQLSaver (langgraph-checkpoint-mysql
3.0.0) inherits langgraph-checkpoint 4.3.2's get_delta_channel_history, which replays each
checkpoint's writes in get_tuple's order, and PyMySQLSaver's get_tuple gives them by (task_id,
idx) (the ARIB-CKPT-005 finding): the history of a DeltaChannel comes out of the writes_sort_key
order the release documents and InMemorySaver keeps (see _delta_history.py). Run in the lg-mysql
environment of `nox -s ecosystem` (a throwaway MariaDB through arib's ServiceManager); exit 1:
reproduced."""

from __future__ import annotations

import asyncio

from _delta_history import compare, sync_call
from _repro import run
from langgraph.checkpoint.mysql.pymysql import PyMySQLSaver

from arib.ground.services import ServiceManager, mysql_database_url


def main() -> bool:
    """True when PyMySQLSaver's history breaks the documented one."""
    with ServiceManager(environ={}) as manager:
        url = mysql_database_url(manager.start("mysql").url, "delta_history")
        with PyMySQLSaver.from_conn_string(url) as saver:
            saver.setup()
            return asyncio.run(compare(saver, sync_call(saver), sync_call))


if __name__ == "__main__":
    run(main)
