"""MariaDB (the ``mysql`` service): start a throwaway server, or probe ``MYSQL_URL``'s.

The server is Debian's ``mariadb-server`` (``mariadbd``; its data folder is made by
``mariadb-install-db``). It runs in a fresh 0700 folder from mkdtemp, as the ``mysql`` user (else
``nobody``) when the bench runs as root, with its socket in that folder, bound to 127.0.0.1 on a
free port. Its one account the lanes use, ``bench@127.0.0.1``, gets a password made for this
run; it is created by an init file (0600, in the private folder, removed once the server is
up), so no command line shows it. Its temporary tables go to a folder of its own in that
folder: a starting MariaDB removes every ``#sql*`` file it finds in its tmpdir, so servers
sharing /tmp delete each other's live temporary tables (mariadb-install-db then crashes or
fails, about 1 run in 10 with three installs at once on a loaded machine). The server is
asked for its version through the greeting every MySQL-protocol server sends on connect (no
driver needed), first over its own socket, which proves the server answering is ours.
"""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import socket
import subprocess
from pathlib import Path
from urllib.parse import urlsplit

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
from arib.ground.services.urls import mask_url, parse_mysql_url

MYSQL_USER = "bench"
MYSQL_DATABASE = "arib"
# Crash durability is not under test (every check runs against a live server), so the
# throwaway server skips the disk flushes and keeps its files small; recorded in
# ServiceInfo.settings.
MYSQL_SETTINGS = {
    "innodb_flush_log_at_trx_commit": "2",
    "innodb_doublewrite": "0",
    "innodb_buffer_pool_size": "64M",
    "innodb_log_file_size": "16M",
    "skip_log_bin": "on",
    "skip_name_resolve": "on",
}
INSTALL_TOOLS = ("mariadb-install-db", "mysql_install_db")
SOCKET_NAME = "mysqld.sock"
MARIADB_PREFIX = "5.5.5-"


def install_tool(server: Path) -> Path | None:
    """``mariadb-install-db`` (or ``mysql_install_db``) for the server ``server``: beside it,
    in ``../bin``, or on PATH."""
    for name in INSTALL_TOOLS:
        for folder in (server.parent, server.parent.parent / "bin"):
            if os.access(folder / name, os.X_OK):
                return folder / name
        found = shutil.which(name)
        if found:
            return Path(found)
    return None


def greeting(address: str | tuple[str, int], timeout: float = 1.0) -> str:
    """The server version a MySQL-protocol server names in the greeting it sends on connect,
    over a unix socket path or a (host, port); ServiceError when it sends an error instead."""
    family = socket.AF_UNIX if isinstance(address, str) else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout)
        sock.connect(address)
        head = _read(sock, 4)
        payload = _read(sock, int.from_bytes(head[:3], "little"))
    if payload[:1] == b"\xff":  # an error packet: 2 bytes of code, then its message
        raise ServiceError(f"the server at {address!r} refused the connection: "
                           f"{payload[3:].decode(errors='replace')}")
    if payload[:1] != b"\x0a":
        raise ServiceError(f"the server at {address!r} sent no MySQL protocol 10 greeting "
                           f"(first byte {payload[:1]!r})")
    version = payload[1:].split(b"\0", 1)[0].decode(errors="replace")
    # MariaDB names itself "5.5.5-<version>" so that old MySQL clients accept it.
    return version.removeprefix(MARIADB_PREFIX) if "MariaDB" in version else version


def _read(sock: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise ConnectionError("the server closed the connection during its greeting")
        data += chunk
    return data


def _install(
    launcher: Launcher, server: Path, root: Path, user: str | None, port: int, tmpdir: Path,
) -> Path:
    """Make the server's data folder in ``root`` with mariadb-install-db."""
    tool = install_tool(server)
    if tool is None:
        launcher.remove_folder(root)
        raise ServiceError(
            f"MariaDB's {' or '.join(INSTALL_TOOLS)} not found beside {server} nor on PATH; "
            f"the rule: a throwaway MariaDB needs its data folder made by it; fix: apt-get "
            f"install mariadb-server, or set MYSQL_URL"
        )
    data = root / "data"
    argv = [str(tool), "--no-defaults", f"--datadir={data}", "--skip-test-db",
            "--auth-root-authentication-method=socket", "--skip-name-resolve",
            f"--innodb-log-file-size={MYSQL_SETTINGS['innodb_log_file_size']}",
            f"--tmpdir={tmpdir}"]
    if user is not None:
        argv.append(f"--user={user}")
    log = root / "install.log"
    with log.open("wb") as out:
        done = subprocess.run(  # noqa: S603 - argv built here, no shell
            argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, cwd=root,
            check=False, timeout=max(launcher.ready_timeout, 60.0),
        )
    if done.returncode != 0:
        tail = log_tail(log, errors=3)
        launcher.remove_folder(root)
        raise ServiceError(
            f"{tool} failed with code {done.returncode} for a throwaway MariaDB on "
            f"{HOST}:{port}; log tail: {tail}"
        )
    return data


def _init_sql(password: str) -> str:
    return (f"CREATE USER IF NOT EXISTS '{MYSQL_USER}'@'{HOST}' IDENTIFIED BY '{password}';\n"
            f"GRANT ALL PRIVILEGES ON *.* TO '{MYSQL_USER}'@'{HOST}' WITH GRANT OPTION;\n"
            f"CREATE DATABASE IF NOT EXISTS {MYSQL_DATABASE};\n")


def start_mariadb(launcher: Launcher, binary: ServerBinary, port: int) -> ServiceInfo | None:
    """Run a fresh MariaDB server on ``port``, as a non-root user when run as root.

    Returns None when the port was taken.
    """
    user = server_user("MariaDB", ("mysql", "nobody"), "MYSQL_URL")
    root = launcher.make_folder("arib-mariadb-", server_base("MariaDB", user, "MYSQL_URL"))
    owner: tuple[int, int] | None = None
    if user is not None:
        entry = pwd.getpwnam(user)
        owner = (entry.pw_uid, entry.pw_gid)
        os.chown(root, *owner)
    tmpdir = root / "tmp"
    tmpdir.mkdir(mode=0o700)
    if owner is not None:
        os.chown(tmpdir, *owner)
    server = Path(binary.path)
    data = _install(launcher, server, root, user, port, tmpdir)
    password = new_password()
    init = root / "init.sql"
    write_private(init, _init_sql(password))
    if owner is not None:
        os.chown(init, *owner)
    socket_path = root / SOCKET_NAME
    argv = [str(server), "--no-defaults", f"--datadir={data}", f"--socket={socket_path}",
            f"--port={port}", f"--bind-address={HOST}", f"--pid-file={root / 'mysqld.pid'}",
            f"--init-file={init}", f"--tmpdir={tmpdir}", "--skip-log-bin",
            "--skip-name-resolve"]
    argv += [f"--{key.replace('_', '-')}={value}" for key, value in MYSQL_SETTINGS.items()
             if value != "on"]
    spawned = launcher.spawn("mysql", argv, root, port, signal.SIGTERM, user=user)
    url = f"mysql://{MYSQL_USER}:{password}@{HOST}:{port}/{MYSQL_DATABASE}"

    def ready() -> str | None:
        # Our own unix socket proves the server is ours (TCP could reach a foreign one); the
        # init file has run once the server accepts connections.
        if not socket_path.exists():
            return None
        version = greeting(str(socket_path))
        tcp = greeting((HOST, port))
        return version if tcp == version else None

    version = launcher.wait_ready(spawned, ready)
    init.unlink(missing_ok=True)
    if version is None:
        return None
    return ServiceInfo(
        "mysql", url, version, external=False, pid=spawned.process.pid, port=port,
        root=str(root), binary=binary, settings={
            **MYSQL_SETTINGS, "auth": f"{MYSQL_USER}@{HOST}, random password per run",
            "os_user": user or pwd.getpwuid(os.geteuid()).pw_name},
    )


def external_mariadb(value: str, var: str) -> ServiceInfo:
    """The MySQL or MariaDB server that ``value`` (the variable ``var``) names, validated and
    greeted (its version from the greeting)."""
    url = parse_mysql_url(value, var)
    parts = urlsplit(url)
    host, port = parts.hostname or HOST, parts.port or 3306
    try:
        version = greeting((host, port), timeout=3.0)
    except (OSError, ServiceError) as exc:
        raise ServiceError(
            f"{var}={mask_url(url)!r} names a MySQL server that does not greet a client "
            f"({type(exc).__name__}: {exc}); the rule: an existing server named by {var} must "
            f"accept connections; fix: start that server, correct {var}, or unset it to let "
            f"the bench start a throwaway MariaDB"
        ) from exc
    return ServiceInfo("mysql", url, version, external=True, pid=None, host=host, port=port)
