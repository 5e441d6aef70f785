"""ARIB-CKPT-005 on lg-mysql, outside the harness: PyMySQLSaver (langgraph-checkpoint-mysql
3.0.0) returns a checkpoint's pending writes by (task_id, idx), not in the writes_sort_key order
(task_path, task_id, idx) that langgraph-checkpoint 4.3.2 documents for get_tuple and that
InMemorySaver keeps (see _writes_order.py). Run in the lg-mysql environment of `nox -s
ecosystem` (a throwaway MariaDB through arib's ServiceManager); exit 1: reproduced."""

from __future__ import annotations

from _repro import run
from _writes_order import compare
from langgraph.checkpoint.mysql.pymysql import PyMySQLSaver

from arib.ground.services import ServiceManager, mysql_database_url


def main() -> bool:
    """True when PyMySQLSaver breaks the documented order."""
    with ServiceManager(environ={}) as manager:
        url = mysql_database_url(manager.start("mysql").url, "writes_order")
        with PyMySQLSaver.from_conn_string(url) as saver:
            saver.setup()
            return compare("PyMySQLSaver", saver)


if __name__ == "__main__":
    run(main)
