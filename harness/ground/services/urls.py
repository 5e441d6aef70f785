"""Service URLs: validate ``REDIS_URL`` / ``POSTGRES_URL`` / ``MYSQL_URL``, and hide the password
they carry."""

from __future__ import annotations

import re
from urllib.parse import SplitResult, urlsplit, urlunsplit

from arib.ground.errors import ServiceError

EXPECTED_FORMS = {
    "redis": "redis://127.0.0.1:6379/0",
    "postgres": "postgresql+asyncpg://user:pass@127.0.0.1:5432/db",
    "mysql": "mysql://user:pass@127.0.0.1:3306/db",
}
MYSQL_SCHEMES = ("mysql", "mariadb", "mysql+pymysql", "mysql+aiomysql")


def mask_url(url: str) -> str:
    """The URL with its password replaced by ``***`` (safe to print and to store)."""
    try:
        parts = urlsplit(url)
        password = parts.password
    except ValueError:
        return re.sub(r"(//[^:/@]*:)[^@/]*@", r"\1***@", url)
    if not password:
        return url
    userinfo, _, hostport = parts.netloc.rpartition("@")
    user = userinfo.split(":", 1)[0]
    return urlunsplit(parts._replace(netloc=f"{user}:***@{hostport}"))


def _bad_url(var: str, value: str, why: str, service: str) -> ServiceError:
    return ServiceError(
        f"{var}={mask_url(value)!r} is malformed: {why}; the rule: {var} must be a URL of the "
        f"form {EXPECTED_FORMS[service]!r}; fix the value or unset {var} to let the bench "
        f"start a throwaway server"
    )


def _split(value: str, var: str, service: str) -> SplitResult:
    try:
        return urlsplit(value.strip())
    except ValueError as exc:
        raise _bad_url(var, value, str(exc), service) from None


def parse_redis_url(value: str, var: str = "REDIS_URL") -> SplitResult:
    """Validate a Redis URL (``redis://`` or ``rediss://``, host, optional port and db)."""
    parts = _split(value, var, "redis")
    if parts.scheme not in ("redis", "rediss"):
        raise _bad_url(var, value, f"scheme {parts.scheme!r} is not redis or rediss", "redis")
    try:
        port = parts.port
    except ValueError:
        raise _bad_url(var, value, "the port is not a number in 1..65535", "redis") from None
    if not parts.hostname:
        raise _bad_url(var, value, "no host", "redis")
    if port == 0:
        raise _bad_url(var, value, "port 0 is not a server port", "redis")
    db = parts.path.strip("/")
    if db and not db.isdigit():
        raise _bad_url(var, value, f"database {db!r} is not a number", "redis")
    return parts


def _database_url(value: str, var: str, service: str, schemes: tuple[str, ...],
                  scheme: str, expected: str) -> str:
    """Validate a database server URL (one of ``schemes``, said as ``expected``; a host, an
    optional port, a database); returns it with ``scheme``."""
    parts = _split(value, var, service)
    if parts.scheme not in schemes:
        raise _bad_url(var, value, f"scheme {parts.scheme!r} is not {expected}", service)
    try:
        port = parts.port
    except ValueError:
        raise _bad_url(var, value, "the port is not a number in 1..65535", service) from None
    if not parts.hostname:
        raise _bad_url(var, value, "no host", service)
    if port == 0:
        raise _bad_url(var, value, "port 0 is not a server port", service)
    if not parts.path.strip("/"):
        raise _bad_url(var, value, "no database name after the host", service)
    return urlunsplit(parts._replace(scheme=scheme))


def parse_postgres_url(value: str, var: str = "POSTGRES_URL") -> str:
    """Validate a PostgreSQL URL; returns it with the ``postgresql+asyncpg`` scheme."""
    return _database_url(value, var, "postgres",
                         ("postgresql+asyncpg", "postgresql", "postgres"), "postgresql+asyncpg",
                         "postgresql+asyncpg")


def parse_mysql_url(value: str, var: str = "MYSQL_URL") -> str:
    """Validate a MySQL or MariaDB URL (host, optional port, a database); returns it with the
    ``mysql`` scheme."""
    return _database_url(value, var, "mysql", MYSQL_SCHEMES, "mysql",
                         f"one of {', '.join(MYSQL_SCHEMES)}")


def asyncpg_dsn(url: str) -> str:
    """A libpq-style DSN (what asyncpg takes) from a ``postgresql+asyncpg`` URL."""
    return urlunsplit(urlsplit(url)._replace(scheme="postgresql"))


def with_database(url: str, database: str) -> str:
    """``url`` naming the database ``database`` instead of its own."""
    return urlunsplit(urlsplit(url)._replace(path=f"/{database}"))
