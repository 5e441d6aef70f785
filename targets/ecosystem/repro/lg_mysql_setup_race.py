"""Direct reproduction, outside the bench's checks, of ARIB-LGSETUP-001 on lg-mysql: four
PyMySQLSaver instances (langgraph-checkpoint-mysql 3.0.0), each on its own pymysql connection,
run setup() at the same instant on one fresh database of a throwaway MariaDB.

Run in the lane's environment (harness/locks/ecosystem/lg-mysql.txt):
    python targets/ecosystem/repro/lg_mysql_setup_race.py
Seen here (MariaDB 10.11.19): in each of 3 rounds one setup() succeeds and three raise
IntegrityError (1062, "Duplicate entry '0' for key 'PRIMARY'").
"""

from __future__ import annotations

import threading
from urllib.parse import unquote, urlsplit

import pymysql
from langgraph.checkpoint.mysql.pymysql import PyMySQLSaver

from arib.ground.services import ServiceManager, mysql_database_url

INSTANCES = 4


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


def main() -> None:
    """Three rounds, each on a fresh database."""
    with ServiceManager(environ={}) as manager:
        base = manager.start("mysql").url
        for round_ in range(3):
            url = mysql_database_url(base, f"setup_race_{round_}")
            results = [""] * INSTANCES
            barrier = threading.Barrier(INSTANCES)
            threads = [threading.Thread(target=attempt, args=(url, results, barrier, i))
                       for i in range(INSTANCES)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            print(f"round {round_}: {results}")


if __name__ == "__main__":
    main()
