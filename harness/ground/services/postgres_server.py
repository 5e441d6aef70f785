"""PostgreSQL: start a throwaway cluster (initdb, then postgres), or probe ``POSTGRES_URL``'s."""

from __future__ import annotations

import importlib.util
import os
import pwd
import signal
import socket
import subprocess
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from arib.ground import binaries
from arib.ground.binaries import ServerBinary
from arib.ground.errors import ServiceError
from arib.ground.services.info import HOST, ServiceInfo
from arib.ground.services.launcher import (
    Launcher,
    log_tail,
    new_password,
    server_base,
    server_user,
    write_private,
)
from arib.ground.services.pgclient import postgres_query
from arib.ground.services.urls import mask_url, parse_postgres_url

PG_SUPERUSER = "bench"
PG_SETTINGS = {
    # Crash durability is not under test (every check runs against a live server), so the
    # throwaway cluster skips the disk flushes; recorded in ServiceInfo.settings.
    "fsync": "off",
    "synchronous_commit": "off",
    "full_page_writes": "off",
}
# The throwaway cluster's only access rules: a password over its private socket folder or
# over 127.0.0.1 (no ::1, no other address, no trust).
PG_HBA = (
    "# written by the bench: scram-sha-256 only, unix socket (0700 folder) and 127.0.0.1\n"
    "local all all scram-sha-256\n"
    "host all all 127.0.0.1/32 scram-sha-256\n"
)


def _unprivileged_user() -> str | None:
    """As root, the user PostgreSQL runs as (it refuses root): postgres, else nobody."""
    return server_user("PostgreSQL", ("postgres", "nobody"), "POSTGRES_URL")


def postgres_version(url: str, bin_dir: Path | None) -> str:
    """The server's version: asked over ``url``, else ``postgres --version`` from ``bin_dir``."""
    if importlib.util.find_spec("asyncpg") is not None:
        return str(postgres_query(url, "SHOW server_version"))
    if bin_dir is not None:
        out = subprocess.run(  # noqa: S603
            [str(bin_dir / "postgres"), "--version"], capture_output=True, text=True,
            check=False, timeout=10,
        ).stdout.strip()
        return version_of(out)
    return "unknown (asyncpg not installed)"


def version_of(banner: str) -> str:
    """The version in ``postgres --version``'s line, as the server's SHOW server_version says
    it: "postgres (PostgreSQL) 15.18 (Debian 15.18-0+deb12u1)" -> "15.18 (Debian
    15.18-0+deb12u1)"."""
    return banner.strip().partition("(PostgreSQL) ")[2] or banner.strip() or "unknown"


def _initdb(
    launcher: Launcher, bin_dir: Path, root: Path, pwfile: Path, port: int,
    run_as: dict[str, Any],
) -> Path:
    """Make the cluster's data folder in ``root`` (superuser password from ``pwfile``)."""
    data = root / "data"
    init_log = root / "initdb.log"
    with init_log.open("wb") as out:
        done = subprocess.run(  # noqa: S603
            [str(bin_dir / "initdb"), "-D", str(data), "-U", PG_SUPERUSER,
             "--auth=scram-sha-256", f"--pwfile={pwfile}", "-E", "UTF8", "--locale=C",
             "--no-sync"],
            stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, cwd=root,
            check=False, timeout=max(launcher.ready_timeout, 60.0), **run_as,
        )
    pwfile.unlink(missing_ok=True)
    if done.returncode != 0:
        tail = log_tail(init_log)
        launcher.remove_folder(root)
        raise ServiceError(
            f"initdb ({bin_dir}) failed with code {done.returncode} for a throwaway "
            f"PostgreSQL on {HOST}:{port}; log tail: {tail}"
        )
    (data / "pg_hba.conf").write_text(PG_HBA)  # keeps the owner: the server's user
    return data


def start_postgres(launcher: Launcher, binary: ServerBinary, port: int) -> ServiceInfo | None:
    """Run a fresh PostgreSQL cluster on ``port``, as a non-root user when run as root.

    Returns None when the port was taken.
    """
    user = _unprivileged_user()
    root = launcher.make_folder("arib-pg-", server_base("PostgreSQL", user, "POSTGRES_URL"))
    password = new_password()
    pwfile = root / "pwfile"
    write_private(pwfile, password + "\n")
    run_as: dict[str, Any] = {}
    if user is not None:
        entry = pwd.getpwnam(user)
        for path in (root, pwfile):
            os.chown(path, entry.pw_uid, entry.pw_gid)
        run_as = dict(user=user, group=entry.pw_gid, extra_groups=[])
    bin_dir = binaries.reachable_postgres(binary, user, root)
    data = _initdb(launcher, bin_dir, root, pwfile, port, run_as)
    argv = [str(bin_dir / "postgres"), "-D", str(data), "-p", str(port), "-k", str(root),
            "-c", f"listen_addresses={HOST}"]
    for key, value in PG_SETTINGS.items():
        argv += ["-c", f"{key}={value}"]
    server = launcher.spawn("postgres", argv, root, port, signal.SIGINT, user=user)
    socket_path = root / f".s.PGSQL.{port}"
    url = f"postgresql+asyncpg://{PG_SUPERUSER}:{password}@{HOST}:{port}/postgres"
    isready = bin_dir / "pg_isready"

    def ready() -> str | None:
        # Our own unix socket proves the server is ours (TCP could reach a foreign one).
        if not socket_path.exists():
            return None
        if os.access(isready, os.X_OK):
            probe = subprocess.run(  # noqa: S603
                [str(isready), "-q", "-h", str(root), "-p", str(port), "-t", "1"],
                stdin=subprocess.DEVNULL, capture_output=True, check=False, timeout=5,
            )
            if probe.returncode != 0:
                return None
        with socket.create_connection((HOST, port), timeout=0.5):
            pass
        return postgres_version(url, bin_dir)

    version = launcher.wait_ready(server, ready)
    if version is None:
        return None
    return ServiceInfo(
        "postgres", url, version, external=False, pid=server.process.pid, port=port,
        root=str(root), binary=binary, settings={
            **PG_SETTINGS, "auth": "scram-sha-256 (random password per run)",
            "os_user": user or pwd.getpwuid(os.geteuid()).pw_name},
    )


def external_postgres(value: str, var: str) -> ServiceInfo:
    """The PostgreSQL server that ``value`` (the variable ``var``) names, validated and asked."""
    url = parse_postgres_url(value, var)
    parts = urlsplit(url)
    try:
        with socket.create_connection((parts.hostname or HOST, parts.port or 5432),
                                      timeout=3.0):
            pass
        version = postgres_version(url, None)
    except Exception as exc:  # noqa: BLE001 - any failure to connect is this error
        raise ServiceError(
            f"{var}={mask_url(url)!r} names a PostgreSQL server that refuses the "
            f"connection ({type(exc).__name__}: {exc}); the rule: an existing server "
            f"named by {var} must accept connections for that user and database; fix: "
            f"start that server, correct {var}, or unset it to let the bench start a "
            f"throwaway PostgreSQL"
        ) from exc
    return ServiceInfo(
        "postgres", url, version, external=True, pid=None, host=parts.hostname or HOST,
        port=parts.port or 5432,
    )
