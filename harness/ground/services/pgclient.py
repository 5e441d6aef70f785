"""Short asyncpg sessions on a PostgreSQL server: a query, a fresh database per lane, its drop."""

from __future__ import annotations

import asyncio
import re
import secrets
import threading
from collections.abc import Callable, Coroutine
from typing import Any
from urllib.parse import urlsplit

from arib.ground.errors import ServiceError
from arib.ground.services.info import ServiceInfo
from arib.ground.services.urls import asyncpg_dsn, with_database


def _run_coroutine(factory: Callable[[], Coroutine[Any, Any, Any]]) -> Any:
    """Run a coroutine to completion in a thread of its own (safe inside a running loop)."""
    box: dict[str, Any] = {}

    def runner() -> None:
        try:
            box["value"] = asyncio.run(factory())
        except BaseException as exc:  # noqa: BLE001 - handed back to the caller below
            box["error"] = exc

    thread = threading.Thread(target=runner, name="arib-services", daemon=True)
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    return box.get("value")


def postgres_query(url: str, sql: str, timeout: float = 5.0) -> Any:
    """The first value of ``sql`` on the server at ``url`` (asyncpg; one short connection)."""
    import asyncpg

    async def query() -> Any:
        conn = await asyncpg.connect(asyncpg_dsn(url), timeout=timeout)
        try:
            return await conn.fetchval(sql)
        finally:
            await conn.close()

    return _run_coroutine(query)


def _database_name(name: str) -> str:
    slug = re.sub(r"[^a-z0-9_]+", "_", name.lower()).strip("_") or "run"
    return f"arib_{slug[:40]}_{secrets.token_hex(4)}"


def fresh_postgres_url(info: ServiceInfo | str, name: str) -> str:
    """CREATE a new, empty database on the server and return its URL (one per lane run).

    Lanes that share a server never see each other's tables; drop it with
    ``drop_postgres_database`` when the run is over (a throwaway server goes away anyway).
    """
    url = info.url if isinstance(info, ServiceInfo) else info
    database = _database_name(name)
    postgres_query(url, f'CREATE DATABASE "{database}"')
    return with_database(url, database)


def drop_postgres_database(url: str) -> None:
    """DROP the database that ``url`` names (connecting through the ``postgres`` database)."""
    database = urlsplit(url).path.strip("/")
    if not re.fullmatch(r"arib_[a-z0-9_]+", database):
        raise ServiceError(
            f"refusing to drop database {database!r}: the rule: only databases made by "
            f"fresh_postgres_url (named arib_...) are dropped; fix: pass a URL it returned"
        )
    postgres_query(with_database(url, "postgres"), f'DROP DATABASE IF EXISTS "{database}"')
