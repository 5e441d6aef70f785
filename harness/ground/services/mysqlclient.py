"""Short sessions on a MySQL or MariaDB server: a query, and a database of one's own.

Through pymysql where it is installed (the lanes' environments), else through the server
package's own command-line client (``mariadb`` or ``mysql``), its password passed in a private
option file, never on a command line.
"""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

from arib.ground.errors import ServiceError
from arib.ground.services.launcher import write_private
from arib.ground.services.urls import mask_url

CLIENTS = ("mariadb", "mysql")
_DATABASE = re.compile(r"[A-Za-z0-9_]{1,64}")


def _parts(url: str) -> dict[str, Any]:
    parts = urlsplit(url)
    return {"host": parts.hostname or "127.0.0.1", "port": parts.port or 3306,
            "user": unquote(parts.username or ""), "password": unquote(parts.password or ""),
            "database": parts.path.strip("/") or None}


def _with_pymysql(url: str, sql: str, timeout: float) -> Any:
    import pymysql

    conn = pymysql.connect(**_parts(url), connect_timeout=timeout, autocommit=True)
    try:
        with conn.cursor() as cur:
            cur.execute(sql)
            row = cur.fetchone()
    finally:
        conn.close()
    return None if row is None else row[0]


def _with_client(url: str, sql: str, timeout: float) -> Any:
    client = next((found for name in CLIENTS if (found := shutil.which(name))), None)
    if client is None:
        raise ServiceError(
            f"cannot query {mask_url(url)!r}: neither pymysql nor a {' or '.join(CLIENTS)} "
            f"client is installed; fix: pip install pymysql, or apt-get install mariadb-client")
    part = _parts(url)
    with tempfile.TemporaryDirectory(prefix="arib-mysql-client-") as folder:
        options = Path(folder) / "client.cnf"
        write_private(options, f"[client]\npassword={part['password']}\n")
        argv = [client, f"--defaults-extra-file={options}", "--protocol=TCP",
                f"--host={part['host']}", f"--port={part['port']}", f"--user={part['user']}",
                f"--connect-timeout={max(1, int(timeout))}", "--batch", "--skip-column-names",
                "--raw", "-e", sql]
        if part["database"]:
            argv.append(part["database"])
        done = subprocess.run(argv, capture_output=True, text=True, check=False,  # noqa: S603
                              timeout=timeout + 10)
    if done.returncode != 0:
        raise ServiceError(f"{client} on {mask_url(url)!r} failed with code "
                           f"{done.returncode}: {done.stderr.strip()}")
    first = done.stdout.splitlines()[0] if done.stdout.strip() else None
    return None if first is None else first.split("\t")[0]


def mysql_query(url: str, sql: str, timeout: float = 5.0) -> Any:
    """The first value of ``sql`` on the server at ``url`` (None when it returns no row);
    through the command-line client, values come back as text."""
    if importlib.util.find_spec("pymysql") is not None:
        return _with_pymysql(url, sql, timeout)
    return _with_client(url, sql, timeout)


def mysql_database_url(url: str, database: str) -> str:
    """CREATE ``database`` on the server at ``url`` unless it exists; its URL."""
    if not _DATABASE.fullmatch(database):
        raise ServiceError(
            f"database name {database!r} is not allowed; the rule: 1 to 64 letters, digits or "
            f"underscores; fix: pass such a name")
    mysql_query(url, f"CREATE DATABASE IF NOT EXISTS `{database}`")
    return urlunsplit(urlsplit(url)._replace(path=f"/{database}"))
