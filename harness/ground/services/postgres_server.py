"""PostgreSQL: start a throwaway cluster (initdb, then postgres), or probe ``POSTGRES_URL``'s."""

from __future__ import annotations

import importlib.util
import os
import pwd
import signal
import socket
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from arib.ground import binaries, owners
from arib.ground.binaries import ServerBinary
from arib.ground.errors import ServiceError
from arib.ground.services.info import HOST, ServiceInfo
from arib.ground.services.launcher import (
    Launcher,
    kill_group,
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


@dataclass
class Cluster:
    """A throwaway cluster whose initdb was started and not yet waited for (``begin_postgres``):
    its private folder, superuser password, server user and the running initdb."""

    root: Path
    password: str
    user: str | None
    bin_dir: Path
    initdb: subprocess.Popen[bytes]
    owner_pid: int = field(default_factory=os.getpid)  # only its maker may wait for or stop it

    def stop(self, launcher: Launcher) -> None:
        """Kill the initdb if it still runs (its session: the server processes it runs too),
        reap it, and remove the folder."""
        kill_group(self.initdb)
        launcher.remove_folder(self.root)


def begin_postgres(launcher: Launcher, binary: ServerBinary) -> Cluster:
    """Make a fresh cluster's folder and start its initdb without waiting for it (about a
    second and a half here), so that the run does other work meanwhile; ``start_postgres``
    waits for it. As root, the cluster is owned by an unprivileged user."""
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
    with (root / "initdb.log").open("wb") as out:
        try:
            process = subprocess.Popen(  # noqa: S603 - argv built here, no shell
                [str(bin_dir / "initdb"), "-D", str(root / "data"), "-U", PG_SUPERUSER,
                 "--auth=scram-sha-256", f"--pwfile={pwfile}", "-E", "UTF8", "--locale=C",
                 "--no-sync"],
                stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, cwd=root,
                start_new_session=True, **run_as,
            )
        except OSError as exc:
            launcher.remove_folder(root)
            raise ServiceError(f"cannot run {str(bin_dir / 'initdb')!r} for a throwaway "
                               f"PostgreSQL: {exc}; fix: install the server or set "
                               f"POSTGRES_URL") from exc
    owners.add_server(root, process.pid, signal.SIGTERM)  # ended with its owner, however
    return Cluster(root, password, user, bin_dir, process)


def _initdb_done(launcher: Launcher, cluster: Cluster, port: int) -> Path:
    """Wait for the cluster's initdb; its data folder (ServiceError when initdb failed)."""
    root = cluster.root
    try:
        code = cluster.initdb.wait(timeout=max(launcher.ready_timeout, 60.0))
    except subprocess.TimeoutExpired:
        code = None
    (root / "pwfile").unlink(missing_ok=True)
    if code is not None:  # it ended: the record lists what runs (the server, next)
        owners.drop_server(root, cluster.initdb.pid)
    if code != 0:
        tail = log_tail(root / "initdb.log")
        cluster.stop(launcher)
        how = "did not finish in time" if code is None else f"failed with code {code}"
        raise ServiceError(f"initdb ({cluster.bin_dir}) {how} for a throwaway PostgreSQL on "
                           f"{HOST}:{port}; log tail: {tail}")
    data = root / "data"
    (data / "pg_hba.conf").write_text(PG_HBA)  # keeps the owner: the server's user
    return data


def start_postgres(launcher: Launcher, binary: ServerBinary, port: int,
                   cluster: Cluster | None = None) -> ServiceInfo | None:
    """Run a fresh PostgreSQL cluster on ``port`` (``cluster``: one ``begin_postgres`` began),
    as a non-root user when run as root.

    Returns None when the port was taken.
    """
    cluster = cluster or begin_postgres(launcher, binary)
    root, password, user, bin_dir = cluster.root, cluster.password, cluster.user, cluster.bin_dir
    data = _initdb_done(launcher, cluster, port)
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
