"""Real services for the lanes that need a server: throwaway redis-server and PostgreSQL.

``ServiceManager`` starts each server on 127.0.0.1, on a free port, in a fresh private
temporary folder (0700), with a random password made for this run (redis ``requirepass``
from a config file in that folder; PostgreSQL ``scram-sha-256``, set through a password file
there): the URL carries it, ``mask_url`` hides it wherever a URL is printed or stored, and no
command line shows it. It waits until the server answers, records its version and which binary
ran (harness.binaries: the system's, else the one shipped in the locked environment), and
stops it on exit -- also when the run fails or is stopped by SIGINT, SIGTERM or SIGHUP --
leaving no process and no folder behind. ``REDIS_URL`` / ``POSTGRES_URL`` in the environment
select an existing server instead; it is validated and probed, never started or stopped. A
missing server binary or Python driver is reported as ``NotMeasured`` with its reason and fix;
no fake ever stands in for a server.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import importlib.util
import os
import pwd
import re
import secrets
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
import threading
import time
import types
from collections.abc import Callable, Coroutine, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import SplitResult, unquote, urlsplit, urlunsplit

from harness import binaries
from harness.binaries import ServerBinary
from harness.errors import ServiceError, UnknownNameError

SERVICES = ("redis", "postgres")
ENV_VARS = {"redis": "REDIS_URL", "postgres": "POSTGRES_URL"}
EXPECTED_FORMS = {
    "redis": "redis://127.0.0.1:6379/0",
    "postgres": "postgresql+asyncpg://user:pass@127.0.0.1:5432/db",
}
HOST = "127.0.0.1"
PG_SUPERUSER = "bench"
PG_SETTINGS = {
    # Crash durability is not under test (every check runs against a live server), so the
    # throwaway cluster skips the disk flushes; recorded in ServiceInfo.settings.
    "fsync": "off",
    "synchronous_commit": "off",
    "full_page_writes": "off",
}
# Python packages each service or lane dependency needs: import name -> pip name.
DRIVERS: dict[str, tuple[str, str]] = {
    "redis": ("redis", "redis"),
    "postgres": ("asyncpg", "asyncpg"),
    "asyncpg": ("asyncpg", "asyncpg"),
    "cryptography": ("cryptography", "cryptography"),
    "mongodb": ("pymongo", "pymongo"),
    "dapr": ("dapr", "dapr"),
}
_PORT_IN_USE = re.compile(r"address already in use", re.IGNORECASE)
# The throwaway cluster's only access rules: a password over its private socket folder or
# over 127.0.0.1 (no ::1, no other address, no trust).
PG_HBA = (
    "# written by the bench: scram-sha-256 only, unix socket (0700 folder) and 127.0.0.1\n"
    "local all all scram-sha-256\n"
    "host all all 127.0.0.1/32 scram-sha-256\n"
)


@dataclass(frozen=True)
class ServiceInfo:
    """A server a lane can use: where it is, what version, and whether the bench owns it."""

    name: str
    url: str
    version: str
    external: bool
    pid: int | None
    host: str = HOST
    port: int = 0
    root: str | None = None
    settings: Mapping[str, str] = field(default_factory=dict)
    # The program that runs it (None for a server named by REDIS_URL / POSTGRES_URL).
    binary: ServerBinary | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "url": mask_url(self.url),
            "version": self.version,
            "external": self.external,
            "pid": self.pid,
            "host": self.host,
            "port": self.port,
            "root": self.root,
            "settings": dict(self.settings),
            "binary": self.binary.to_json() if self.binary is not None else None,
        }


@dataclass(frozen=True)
class NotMeasured:
    """A lane or service that cannot be measured here, and why (with the fix)."""

    name: str
    reason: str

    def to_json(self) -> dict[str, str]:
        return {"name": self.name, "reason": self.reason}


# --------------------------------------------------------------------------- URLs


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


def parse_postgres_url(value: str, var: str = "POSTGRES_URL") -> str:
    """Validate a PostgreSQL URL; returns it with the ``postgresql+asyncpg`` scheme."""
    parts = _split(value, var, "postgres")
    if parts.scheme not in ("postgresql+asyncpg", "postgresql", "postgres"):
        raise _bad_url(
            var, value, f"scheme {parts.scheme!r} is not postgresql+asyncpg", "postgres"
        )
    try:
        port = parts.port
    except ValueError:
        raise _bad_url(var, value, "the port is not a number in 1..65535", "postgres") from None
    if not parts.hostname:
        raise _bad_url(var, value, "no host", "postgres")
    if port == 0:
        raise _bad_url(var, value, "port 0 is not a server port", "postgres")
    if not parts.path.strip("/"):
        raise _bad_url(var, value, "no database name after the host", "postgres")
    return urlunsplit(parts._replace(scheme="postgresql+asyncpg"))


def _asyncpg_dsn(url: str) -> str:
    """A libpq-style DSN (what asyncpg takes) from a ``postgresql+asyncpg`` URL."""
    return urlunsplit(urlsplit(url)._replace(scheme="postgresql"))


def _with_database(url: str, database: str) -> str:
    return urlunsplit(urlsplit(url)._replace(path=f"/{database}"))


# --------------------------------------------------------------------------- probes


def free_port() -> int:
    """A TCP port on 127.0.0.1 that is free right now (another process may take it later)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


def _resp_encode(*args: str) -> bytes:
    out = [f"*{len(args)}\r\n".encode()]
    for arg in args:
        raw = arg.encode()
        out.append(b"$%d\r\n%s\r\n" % (len(raw), raw))
    return b"".join(out)


def _resp_read(stream: Any) -> Any:
    """Read one RESP2 reply; an error reply is returned as an Exception instance."""
    line = stream.readline()
    if not line.endswith(b"\r\n"):
        raise ConnectionError("connection closed mid-reply")
    kind, body = line[:1], line[1:-2]
    if kind == b"+":
        return body.decode()
    if kind == b"-":
        return RuntimeError(body.decode())
    if kind == b":":
        return int(body)
    if kind == b"$":
        size = int(body)
        if size < 0:
            return None
        data = stream.read(size + 2)
        return data[:-2].decode()
    if kind == b"*":
        return [_resp_read(stream) for _ in range(int(body))]
    raise ConnectionError(f"not a RESP reply: {line[:40]!r}")


def redis_probe(url: str, timeout: float = 2.0) -> dict[str, str]:
    """PING a Redis server with raw RESP (no client library); returns its INFO server fields.

    Raises OSError when the server cannot be reached and RuntimeError when it answers with an
    error (e.g. NOAUTH).
    """
    parts = urlsplit(url)
    host, port = parts.hostname or HOST, parts.port or 6379
    raw = socket.create_connection((host, port), timeout=timeout)
    sock: socket.socket = raw
    if parts.scheme == "rediss":
        sock = ssl.create_default_context().wrap_socket(raw, server_hostname=host)
    with sock, sock.makefile("rb") as stream:
        if parts.password:
            user = unquote(parts.username) if parts.username else None
            auth = ("AUTH", user, unquote(parts.password)) if user else (
                "AUTH", unquote(parts.password))
            sock.sendall(_resp_encode(*auth))
            reply = _resp_read(stream)
            if isinstance(reply, Exception):
                raise reply
        sock.sendall(_resp_encode("PING"))
        reply = _resp_read(stream)
        if isinstance(reply, Exception):
            raise reply
        if reply != "PONG":
            raise RuntimeError(f"PING answered {reply!r}, not 'PONG'")
        sock.sendall(_resp_encode("INFO", "server"))
        info = _resp_read(stream)
        if isinstance(info, Exception):
            raise info
    fields: dict[str, str] = {}
    for row in str(info).splitlines():
        key, sep, value = row.partition(":")
        if sep:
            fields[key.strip()] = value.strip()
    return fields


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
        conn = await asyncpg.connect(_asyncpg_dsn(url), timeout=timeout)
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
    return _with_database(url, database)


def drop_postgres_database(url: str) -> None:
    """DROP the database that ``url`` names (connecting through the ``postgres`` database)."""
    database = urlsplit(url).path.strip("/")
    if not re.fullmatch(r"arib_[a-z0-9_]+", database):
        raise ServiceError(
            f"refusing to drop database {database!r}: the rule: only databases made by "
            f"fresh_postgres_url (named arib_...) are dropped; fix: pass a URL it returned"
        )
    postgres_query(_with_database(url, "postgres"), f'DROP DATABASE IF EXISTS "{database}"')


def missing_python_driver(name: str) -> NotMeasured | None:
    """NotMeasured when the Python package that ``name`` needs is not importable."""
    if name not in DRIVERS:
        raise UnknownNameError(
            f"unknown driver or service {name!r}: use one of {', '.join(sorted(DRIVERS))}"
        )
    module, pip_name = DRIVERS[name]
    if importlib.util.find_spec(module) is None:
        return NotMeasured(name, f"not measured: {pip_name} not installed (pip install {pip_name})")
    return None


def new_password() -> str:
    """A random password for one throwaway server (URL-safe: no quoting in a URL)."""
    return secrets.token_urlsafe(24)


def _write_private(path: Path, text: str) -> None:
    """Create ``path`` readable by its owner only; never through a planted file or link."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(text)


def _log_tail(path: Path, lines: int = 15) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return "(no log)"
    tail = text.strip().splitlines()[-lines:]
    return " | ".join(tail) if tail else "(log is empty)"


def _unprivileged_user() -> str | None:
    """As root, the user PostgreSQL runs as (it refuses root): postgres, else nobody."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        with contextlib.suppress(KeyError):
            pwd.getpwnam(name)
            return name
    raise ServiceError(
        "PostgreSQL refuses to run as root and this machine has neither a 'postgres' nor a "
        "'nobody' user; fix: create one (useradd --system postgres) or set POSTGRES_URL"
    )


def _postgres_base(user: str | None) -> str | None:
    """Where a throwaway cluster's folder goes: the temp folder, unless the server's user
    cannot reach it or its socket path would be too long (107 bytes); then /tmp."""
    base = Path(tempfile.gettempdir())
    short = len(str(base)) <= 60
    if short and (user is None or binaries.can_enter(base, user)):
        return None
    fallback = Path("/tmp")
    if user is None or binaries.can_enter(fallback, user):
        return str(fallback)
    raise ServiceError(
        f"the PostgreSQL server runs as {user!r}, who cannot enter the temporary folder "
        f"{str(base)!r} nor /tmp; the rule: its data and socket folder must be reachable by "
        f"that user; fix: set TMPDIR to a folder that {user!r} may enter, or set POSTGRES_URL"
    )


# --------------------------------------------------------------------------- the manager


@dataclass
class _Server:
    """A throwaway server the manager started: its process, folder and log."""

    name: str
    binary: str
    process: subprocess.Popen[bytes]
    root: Path
    log: Path
    port: int
    stop_signal: int
    # A forked child (harness.child) inherits the manager and its signal handlers; only the
    # process that started a server may stop it.
    owner_pid: int = field(default_factory=os.getpid)


class ServiceManager:
    """Starts, tracks and stops the servers of one run; a context manager.

    ``binaries`` names the server to run ({"redis": path to redis-server, "postgres": folder
    holding initdb and postgres}); without it, each is looked for in ``sources`` in order
    ("system", then "embedded": see harness.binaries). ``environ`` replaces os.environ for
    REDIS_URL / POSTGRES_URL; ``port_picker`` chooses ports (tests force a taken one).
    """

    def __init__(
        self,
        *,
        ready_timeout: float = 30.0,
        port_retries: int = 3,
        stop_timeout: float = 10.0,
        binaries: Mapping[str, str] | None = None,
        sources: Sequence[str] = binaries.SOURCES,
        environ: Mapping[str, str] | None = None,
        port_picker: Callable[[], int] = free_port,
        handle_signals: bool = True,
    ) -> None:
        self.ready_timeout = ready_timeout
        self.port_retries = port_retries
        self.stop_timeout = stop_timeout
        self._binaries = dict(binaries or {})
        self._sources = tuple(sources)
        self._environ = os.environ if environ is None else environ
        self._port_picker = port_picker
        self._handle_signals = handle_signals
        self._servers: dict[str, _Server] = {}
        self._infos: dict[str, ServiceInfo] = {}
        self._previous: dict[int, Any] = {}
        # Folders made for a server not yet registered, with the pid of their maker.
        self._pending: dict[Path, int] = {}
        self._atexit = False
        self._in_signal = False

    # -- context management -------------------------------------------------------------

    def __enter__(self) -> ServiceManager:
        """Stop the servers on SIGINT, SIGTERM and SIGHUP too.

        Only a signal whose action is to end the process at once (SIG_DFL) gets a handler
        here: one that a Python handler turns into an exception (SIGINT's KeyboardInterrupt,
        harness.interrupts) unwinds through ``__exit__``, which stops the servers after the
        run has killed its children and written its results.
        """
        if self._handle_signals and threading.current_thread() is threading.main_thread():
            for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
                if signal.getsignal(signum) is signal.SIG_DFL:
                    self._previous[signum] = signal.SIG_DFL
                    signal.signal(signum, self._on_signal)
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            self.stop_all()
        finally:
            self._restore_signals()

    def _restore_signals(self) -> None:
        for signum, previous in self._previous.items():
            with contextlib.suppress(ValueError, TypeError):
                signal.signal(signum, previous)
        self._previous.clear()

    def _on_signal(self, signum: int, frame: types.FrameType | None) -> None:
        """Stop every server, then die of the signal as the process would have.

        A second signal that arrives while the servers are being stopped is ignored, so that
        the first stop runs to its end.
        """
        if self._in_signal:
            return
        self._in_signal = True
        try:
            self.stop_all()  # a no-op in a forked child
        finally:
            self._restore_signals()
            self._in_signal = False
        signal.raise_signal(signum)  # the default action again: the process ends

    # -- queries --------------------------------------------------------------------------

    @property
    def services(self) -> dict[str, str]:
        """name -> URL of every running service, as ``BuildContext.services`` takes it."""
        return {name: info.url for name, info in self._infos.items()}

    @property
    def infos(self) -> dict[str, ServiceInfo]:
        return dict(self._infos)

    def _check_name(self, name: str) -> None:
        if name not in SERVICES:
            raise UnknownNameError(
                f"unknown service {name!r}: the bench runs {', '.join(SERVICES)}; "
                f"use one of those names"
            )

    def binary(self, name: str) -> ServerBinary | None:
        """The server program ``name`` would run (see harness.binaries); None if none is found."""
        self._check_name(name)
        return binaries.find(name, self._binaries.get(name), self._sources)

    def availability(self, name: str) -> NotMeasured | None:
        """NotMeasured when ``name`` can neither be started here nor found in the environment."""
        self._check_name(name)
        if self._environ.get(ENV_VARS[name]) or self.binary(name) is not None:
            return None
        where = binaries.looked_in(name, self._binaries.get(name), self._sources)
        if name == "redis":
            return NotMeasured(
                "redis",
                f"not measured: redis-server not found (looked in {where}; install the locked "
                f"environment, apt-get install redis-server, or set REDIS_URL)",
            )
        return NotMeasured(
            "postgres",
            f"not measured: PostgreSQL server binaries (initdb, postgres) not found (looked in "
            f"{where}; install the locked environment, apt-get install postgresql, or set "
            f"POSTGRES_URL)",
        )

    @staticmethod
    def missing_python_driver(name: str) -> NotMeasured | None:
        """See the module-level ``missing_python_driver``."""
        return missing_python_driver(name)

    # -- start ----------------------------------------------------------------------------

    def ensure(self, name: str) -> ServiceInfo | NotMeasured:
        """The running service, started if needed; NotMeasured when its binary is missing."""
        missing = self.availability(name)
        return missing if missing is not None else self.start(name)

    def start(self, name: str) -> ServiceInfo:
        """Start (or find in the environment) the service ``name``; idempotent per name."""
        self._check_name(name)
        if name in self._infos:
            return self._infos[name]
        if not self._atexit:
            atexit.register(self.stop_all)
            self._atexit = True
        env_value = self._environ.get(ENV_VARS[name])
        if env_value:
            info = self._external(name, env_value)
        else:
            missing = self.availability(name)
            if missing is not None:
                raise ServiceError(f"cannot start {name}: {missing.reason}")
            info = self._start_with_retries(name)
        self._infos[name] = info
        return info

    def _start_with_retries(self, name: str) -> ServiceInfo:
        tried: list[int] = []
        for _ in range(max(1, self.port_retries)):
            port = self._port_picker()
            tried.append(port)
            info = self._start_redis(port) if name == "redis" else self._start_postgres(port)
            if info is not None:
                return info
        raise ServiceError(
            f"cannot start {name}: port {tried[-1]} on {HOST} was already in use, and so were "
            f"the ports tried before it ({', '.join(map(str, tried))}); the rule: a throwaway "
            f"server needs a free port; fix: free a port or set {ENV_VARS[name]}"
        )

    def _spawn(
        self, name: str, argv: list[str], root: Path, port: int, stop_signal: int,
        user: str | None = None,
    ) -> _Server:
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
                self._remove_folder(root)
                raise ServiceError(
                    f"cannot run {argv[0]!r} for {name} on {HOST}:{port}: {exc}; fix: install "
                    f"the server or point ServiceManager(binaries=...) at a working one"
                ) from exc
        server = _Server(name, argv[0], process, root, log, port, stop_signal)
        self._servers[name] = server
        self._pending.pop(root, None)
        return server

    def _make_folder(self, prefix: str, base: str | None = None) -> Path:
        root = Path(tempfile.mkdtemp(prefix=prefix, dir=base))
        self._pending[root] = os.getpid()
        return root

    def _remove_folder(self, root: Path) -> None:
        shutil.rmtree(root, ignore_errors=True)
        self._pending.pop(root, None)

    def _fail_start(self, server: _Server, why: str) -> ServiceError:
        tail = _log_tail(server.log)
        self._stop_server(server)
        return ServiceError(
            f"{server.binary} ({server.name}) on {HOST}:{server.port} {why}; log tail: {tail}"
        )

    def _wait_ready(self, server: _Server, ready: Callable[[], str | None]) -> str | None:
        """Poll ``ready`` (returns the version once up); None when the port was taken."""
        deadline = time.monotonic() + self.ready_timeout
        last: BaseException | None = None
        while True:
            code = server.process.poll()
            if code is not None:
                if _PORT_IN_USE.search(_log_tail(server.log, 40)):
                    self._stop_server(server)
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

    def _start_redis(self, port: int) -> ServiceInfo | None:
        binary = self.binary("redis")
        assert binary is not None
        root = self._make_folder("arib-redis-")
        password = new_password()
        # The settings, the password among them, go in a file of the private folder: a
        # command line is visible to every user (ps).
        config = root / "redis.conf"
        _write_private(config, "".join(f"{key} {value}\n" for key, value in {
            "port": port, "bind": HOST, "save": '""', "appendonly": "no", "dir": f'"{root}"',
            "daemonize": "no", "protected-mode": "yes", "requirepass": password,
        }.items()))
        server = self._spawn("redis", [binary.path, str(config)], root, port, signal.SIGTERM)
        url = f"redis://:{password}@{HOST}:{port}/0"

        def ready() -> str | None:
            fields = redis_probe(url, timeout=0.5)
            # The server answering must be ours, not another one that holds the port.
            if fields.get("process_id") != str(server.process.pid):
                return None
            return fields.get("redis_version", "unknown")

        version = self._wait_ready(server, ready)
        if version is None:
            return None
        return ServiceInfo(
            "redis", url, version, external=False, pid=server.process.pid, port=port,
            root=str(root), binary=binary,
            settings={"save": "", "appendonly": "no", "auth": "requirepass (random per run)"},
        )

    def _start_postgres(self, port: int) -> ServiceInfo | None:
        binary = self.binary("postgres")
        assert binary is not None
        user = _unprivileged_user()
        root = self._make_folder("arib-pg-", _postgres_base(user))
        data = root / "data"
        password = new_password()
        pwfile = root / "pwfile"
        _write_private(pwfile, password + "\n")
        run_as: dict[str, Any] = {}
        if user is not None:
            entry = pwd.getpwnam(user)
            for path in (root, pwfile):
                os.chown(path, entry.pw_uid, entry.pw_gid)
            run_as = dict(user=user, group=entry.pw_gid, extra_groups=[])
        bin_dir = binaries.reachable_postgres(binary, user, root)
        init_log = root / "initdb.log"
        with init_log.open("wb") as out:
            done = subprocess.run(  # noqa: S603
                [str(bin_dir / "initdb"), "-D", str(data), "-U", PG_SUPERUSER,
                 "--auth=scram-sha-256", f"--pwfile={pwfile}", "-E", "UTF8", "--locale=C",
                 "--no-sync"],
                stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, cwd=root,
                check=False, timeout=max(self.ready_timeout, 60.0), **run_as,
            )
        pwfile.unlink(missing_ok=True)
        if done.returncode != 0:
            tail = _log_tail(init_log)
            self._remove_folder(root)
            raise ServiceError(
                f"initdb ({bin_dir}) failed with code {done.returncode} for a throwaway "
                f"PostgreSQL on {HOST}:{port}; log tail: {tail}"
            )
        (data / "pg_hba.conf").write_text(PG_HBA)  # keeps the owner: the server's user
        argv = [str(bin_dir / "postgres"), "-D", str(data), "-p", str(port), "-k", str(root),
                "-c", f"listen_addresses={HOST}"]
        for key, value in PG_SETTINGS.items():
            argv += ["-c", f"{key}={value}"]
        server = self._spawn("postgres", argv, root, port, signal.SIGINT, user=user)
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
            return self._postgres_version(url, bin_dir)

        version = self._wait_ready(server, ready)
        if version is None:
            return None
        return ServiceInfo(
            "postgres", url, version, external=False, pid=server.process.pid, port=port,
            root=str(root), binary=binary, settings={
                **PG_SETTINGS, "auth": "scram-sha-256 (random password per run)",
                "os_user": user or pwd.getpwuid(os.geteuid()).pw_name},
        )

    @staticmethod
    def _postgres_version(url: str, bin_dir: Path | None) -> str:
        if importlib.util.find_spec("asyncpg") is not None:
            return str(postgres_query(url, "SHOW server_version"))
        if bin_dir is not None:
            out = subprocess.run(  # noqa: S603
                [str(bin_dir / "postgres"), "--version"], capture_output=True, text=True,
                check=False, timeout=10,
            ).stdout.strip()
            return out.rsplit(" ", 1)[-1] if out else "unknown"
        return "unknown (asyncpg not installed)"

    def _external(self, name: str, value: str) -> ServiceInfo:
        var = ENV_VARS[name]
        if name == "redis":
            parts = parse_redis_url(value, var)
            url = value.strip()
            try:
                fields = redis_probe(url, timeout=3.0)
            except (OSError, RuntimeError, ssl.SSLError) as exc:
                raise ServiceError(
                    f"{var}={mask_url(url)!r} names a Redis server that does not answer PING "
                    f"({exc}); the rule: an existing server named by {var} must accept "
                    f"connections; fix: start that server, correct {var}, or unset it to let "
                    f"the bench start a throwaway redis-server"
                ) from exc
            version = fields.get("redis_version", "unknown")
        else:
            url = parse_postgres_url(value, var)
            parts = urlsplit(url)
            try:
                with socket.create_connection((parts.hostname or HOST, parts.port or 5432),
                                              timeout=3.0):
                    pass
                if importlib.util.find_spec("asyncpg") is not None:
                    version = str(postgres_query(url, "SHOW server_version"))
                else:
                    version = "unknown (asyncpg not installed)"
            except Exception as exc:  # noqa: BLE001 - any failure to connect is this error
                raise ServiceError(
                    f"{var}={mask_url(url)!r} names a PostgreSQL server that refuses the "
                    f"connection ({type(exc).__name__}: {exc}); the rule: an existing server "
                    f"named by {var} must accept connections for that user and database; fix: "
                    f"start that server, correct {var}, or unset it to let the bench start a "
                    f"throwaway PostgreSQL"
                ) from exc
        return ServiceInfo(
            name, url, version, external=True, pid=None, host=parts.hostname or HOST,
            port=parts.port or (6379 if name == "redis" else 5432),
        )

    # -- health and stop ------------------------------------------------------------------

    def check(self, name: str) -> ServiceInfo:
        """The service's info if it is still up; ServiceError naming the cause if it died."""
        self._check_name(name)
        if name not in self._infos:
            raise ServiceError(
                f"service {name!r} was not started; fix: call ServiceManager.start({name!r})"
            )
        info = self._infos[name]
        server = self._servers.get(name)
        if server is not None and server.process.poll() is not None:
            raise ServiceError(
                f"{server.binary} ({name}, pid {server.process.pid}) on {HOST}:{server.port} "
                f"exited with code {server.process.returncode} during the run; log tail: "
                f"{_log_tail(server.log)}"
            )
        return info

    def _stop_server(self, server: _Server) -> None:
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
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=self.stop_timeout)
        self._remove_folder(server.root)

    def stop(self, name: str) -> None:
        """Stop the service ``name`` if the manager started it; an external one is left alone."""
        self._infos.pop(name, None)
        server = self._servers.get(name)
        if server is not None:
            self._stop_server(server)

    def stop_all(self) -> None:
        """Stop every server this manager started; safe to call more than once.

        A forked child of the process that started a server leaves it alone: it is the
        parent's.
        """
        me = os.getpid()
        for name, server in list(self._servers.items()):
            if server.owner_pid == me:
                with contextlib.suppress(Exception):
                    self.stop(name)
        for root, maker in list(self._pending.items()):
            if maker == me:
                self._remove_folder(root)
        self._infos.clear()
        if self._atexit:
            atexit.unregister(self.stop_all)
            self._atexit = False

    def processes(self) -> Iterator[tuple[str, int, Path]]:
        """(name, pid, folder) of every server this manager runs (for reports and tests)."""
        for name, server in self._servers.items():
            yield name, server.process.pid, server.root
