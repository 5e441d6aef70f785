"""Running a throwaway server process: its private folder, its start, readiness and stop.

The recipes of each server (arib.ground.services.redis_server, .postgres_server) say what to run;
``Launcher`` (the base of ``ServiceManager``) runs it in a fresh 0700 folder, polls it until
it is ready, and stops it with its own signal, then SIGKILL to its process group. The folder
records the server (arib.ground.owners), so a run killed with SIGKILL does not leave it
running: the run's watcher stops it and removes the folder.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import re
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from arib.ground import binaries, owners
from arib.ground.errors import ServiceError
from arib.ground.services.info import HOST

_PORT_IN_USE = re.compile(r"address already in use", re.IGNORECASE)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that is free right now (another process may take it later)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


def new_password() -> str:
    """A random password for one throwaway server (URL-safe: no quoting in a URL)."""
    return secrets.token_urlsafe(24)


def write_private(path: Path, text: str) -> None:
    """Create ``path`` readable by its owner only; never through a planted file or link."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(text)


def log_tail(path: Path, lines: int = 15, errors: int = 0) -> str:
    """The last ``lines`` lines of a server's log, on one line (for an error message), after
    its first ``errors`` lines that say ``ERROR`` when they come before the tail (a tool that
    fails early and then prints its advice pushes the cause out of the tail)."""
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return "(no log)"
    every = text.strip().splitlines()
    tail = every[-lines:]
    head = [line for line in every[:-lines] if "ERROR" in line][:errors]
    shown = [*head, "...", *tail] if head else tail
    return " | ".join(shown) if shown else "(log is empty)"


def server_user(server: str, candidates: tuple[str, ...], variable: str) -> str | None:
    """As root, the user a server that refuses root runs as: the first of ``candidates`` this
    machine has; None when the bench is not root. ServiceError naming the fix (create one, or
    name an external server with ``variable``) when there is none."""
    if os.geteuid() != 0:
        return None
    for name in candidates:
        with contextlib.suppress(KeyError):
            pwd.getpwnam(name)
            return name
    raise ServiceError(
        f"{server} refuses to run as root and this machine has none of the users "
        f"{', '.join(map(repr, candidates))}; fix: create one (useradd --system "
        f"{candidates[0]}) or set {variable}")


def server_base(server: str, user: str | None, variable: str) -> str | None:
    """Where a throwaway server's folder goes: the temp folder (None), unless the server's
    user cannot reach it or its socket path would be too long (107 bytes); then /tmp.
    ServiceError naming the fix when ``user`` can enter neither."""
    base = Path(tempfile.gettempdir())
    if len(str(base)) <= 60 and (user is None or binaries.can_enter(base, user)):
        return None
    if user is None or binaries.can_enter(Path("/tmp"), user):
        return "/tmp"
    raise ServiceError(
        f"the {server} server runs as {user!r}, who cannot enter the temporary folder "
        f"{str(base)!r} nor /tmp; the rule: its data and socket folder must be reachable by "
        f"that user; fix: set TMPDIR to a folder that {user!r} may enter, or set {variable}")

@dataclass
class Server:
    """A throwaway server the manager started: its process, folder and log."""

    name: str
    binary: str
    process: subprocess.Popen[bytes]
    root: Path
    log: Path
    port: int
    stop_signal: int
    # A forked child (arib.ground.child) inherits the manager and its signal handlers; only the
    # process that started a server may stop it.
    owner_pid: int = field(default_factory=os.getpid)


class Launcher:
    """Runs server processes in private folders and stops them; tracks what it runs."""

    def __init__(self, *, ready_timeout: float, stop_timeout: float) -> None:
        self.ready_timeout = ready_timeout
        self.stop_timeout = stop_timeout
        self._servers: dict[str, Server] = {}
        # Folders made for a server not yet registered, with the pid of their maker.
        self._pending: dict[Path, int] = {}

    def make_folder(self, prefix: str, base: str | None = None) -> Path:
        """A fresh private (0700) folder for one server, removed on stop or on failure."""
        root = Path(tempfile.mkdtemp(prefix=prefix, dir=base))
        owners.claim(root)  # the server dies with this process (arib.ground.owners)
        self._pending[root] = os.getpid()
        return root

    def remove_folder(self, root: Path) -> None:
        """Remove a server's folder (and forget it)."""
        shutil.rmtree(root, ignore_errors=True)
        self._pending.pop(root, None)

    def spawn(
        self, name: str, argv: list[str], root: Path, port: int, stop_signal: int,
        user: str | None = None,
    ) -> Server:
        """Start ``argv`` in its own session in ``root``, its output to ``root/server.log``."""
        log = root / "server.log"
        with log.open("ab") as out:
            kwargs: dict[str, Any] = {}
            if user is not None:
                kwargs.update(user=user, group=pwd.getpwnam(user).pw_gid, extra_groups=[])
            try:
                process = subprocess.Popen(  # noqa: S603 - argv built here, no shell
                    argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                    cwd=root, start_new_session=True, **kwargs,
                )
            except OSError as exc:
                self.remove_folder(root)
                raise ServiceError(
                    f"cannot run {argv[0]!r} for {name} on {HOST}:{port}: {exc}; fix: install "
                    f"the server or point ServiceManager(binaries=...) at a working one"
                ) from exc
        owners.add_server(root, process.pid, stop_signal)
        server = Server(name, argv[0], process, root, log, port, stop_signal)
        self._servers[name] = server
        self._pending.pop(root, None)
        return server

    def _fail_start(self, server: Server, why: str) -> ServiceError:
        tail = log_tail(server.log)
        self.stop_server(server)
        return ServiceError(
            f"{server.binary} ({server.name}) on {HOST}:{server.port} {why}; log tail: {tail}"
        )

    def wait_ready(self, server: Server, ready: Callable[[], str | None]) -> str | None:
        """Poll ``ready`` (returns the version once up); None when the port was taken."""
        deadline = time.monotonic() + self.ready_timeout
        last: BaseException | None = None
        while True:
            code = server.process.poll()
            if code is not None:
                if _PORT_IN_USE.search(log_tail(server.log, 40)):
                    self.stop_server(server)
                    return None
                raise self._fail_start(server, f"exited with code {code} before it was ready")
            try:
                version = ready()
            except Exception as exc:  # noqa: BLE001 - not ready yet; kept for the message
                last, version = exc, None
            if version is not None:
                return version
            if time.monotonic() >= deadline:
                probe = f"; last probe: {type(last).__name__}: {last}" if last else ""
                raise self._fail_start(
                    server,
                    f"was not ready within the readiness timeout of {self.ready_timeout}s"
                    f"{probe} (fix: check the log, or raise ServiceManager(ready_timeout=...))",
                )
            time.sleep(0.05)

    def stop_server(self, server: Server) -> None:
        """Stop one server (its signal, then SIGKILL to its process group) and remove its folder.

        The group is killed only while the leader is not yet reaped, so its id cannot have been
        reused; PostgreSQL backends (same group) end with a fast shutdown of the postmaster.
        """
        self._servers.pop(server.name, None)
        process = server.process
        if process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                process.send_signal(server.stop_signal)
            try:
                process.wait(timeout=self.stop_timeout)
            except subprocess.TimeoutExpired:
                kill_group(process, self.stop_timeout)
        self.remove_folder(server.root)


def kill_group(process: subprocess.Popen[bytes], timeout: float | None = None) -> None:
    """SIGKILL the process group that ``process`` leads (its own session), then reap it.

    Only while the leader is not yet reaped, so that the group's id cannot have been reused.
    """
    if process.poll() is None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=timeout)
