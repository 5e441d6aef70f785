"""ARIB-LGSETUP-001 on lg-mysql, outside the harness: four PyMySQLSaver instances
(langgraph-checkpoint-mysql 3.0.0), each on its own pymysql connection, run setup() at the same
instant on one fresh database of a throwaway MariaDB (started through arib's ServiceManager).

setup() reads the newest applied migration and then inserts each further migration's number
into checkpoint_migrations; instances that read the same number all insert the next one, and
every instance but the first fails on the table's primary key with IntegrityError (1062,
"Duplicate entry '0' (or '1') for key 'PRIMARY'"), where several processes starting one app
against one new database all need setup() to succeed. Run in the lg-mysql environment of
`nox -s ecosystem`; exit 1: reproduced (some setup() raised in some round)."""

from __future__ import annotations

import threading
from urllib.parse import unquote, urlsplit

import pymysql
from _repro import run
from langgraph.checkpoint.mysql.pymysql import PyMySQLSaver

from arib.ground.services import ServiceManager, mysql_database_url

INSTANCES = 4
ROUNDS = 3


def attempt(url: str, results: list[str], barrier: threading.Barrier, i: int) -> None:
    """Open a connection, wait for the others, run setup(); record what happened."""
    parts = urlsplit(url)
    conn = pymysql.connect(host=parts.hostname, port=parts.port or 3306,
                           user=unquote(parts.username or ""),
                           password=unquote(parts.password or ""),
                           database=parts.path.strip("/"), autocommit=True)
    barrier.wait()
    try:
        PyMySQLSaver(conn).setup()
        results[i] = "ok"
    except Exception as exc:  # noqa: BLE001 - what setup() raised is the observation
        results[i] = f"{type(exc).__name__}: {exc}"
    finally:
        conn.close()


def main() -> bool:
    """ROUNDS rounds, each on a fresh database; True when some setup() raised."""
    failed = 0
    with ServiceManager(environ={}) as manager:
        base = manager.start("mysql").url
        for round_ in range(ROUNDS):
            url = mysql_database_url(base, f"setup_race_{round_}")
            results = [""] * INSTANCES
            barrier = threading.Barrier(INSTANCES)
            threads = [threading.Thread(target=attempt, args=(url, results, barrier, i))
                       for i in range(INSTANCES)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            failed += sum(1 for r in results if r != "ok")
            print(f"round {round_}: {results}")
    print(f"{failed} of {ROUNDS * INSTANCES} concurrent setup() calls raised")
    return failed > 0


if __name__ == "__main__":
    run(main)
