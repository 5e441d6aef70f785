"""``ServiceManager``: the servers of one run, started once, checked, and stopped on every exit."""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import threading
import types
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from arib.ground import binaries
from arib.ground.binaries import ServerBinary
from arib.ground.errors import ServiceError, UnknownNameError
from arib.ground.services import redis_keys
from arib.ground.services.info import (
    ENV_VARS,
    HOST,
    SERVICES,
    NotMeasured,
    ServiceInfo,
    missing_python_driver,
)
from arib.ground.services.launcher import Launcher, free_port, log_tail
from arib.ground.services.mariadb_server import external_mariadb, start_mariadb
from arib.ground.services.postgres_server import (
    Cluster,
    begin_postgres,
    external_postgres,
    start_postgres,
)
from arib.ground.services.redis_server import external_redis, start_redis

# How each service is started here, or probed where its variable names a server.
STARTERS = {"redis": start_redis, "postgres": start_postgres, "mysql": start_mariadb}
EXTERNAL = {"redis": external_redis, "postgres": external_postgres, "mysql": external_mariadb}


@dataclass(frozen=True)
class Beginner:
    """How a service whose start has a slow first part is started in two steps
    (``ServiceManager.begin``): ``begin(launcher, binary)`` starts the slow part without
    waiting and returns what it began; ``finish(launcher, binary, port, begun)`` waits for it
    and runs the server on ``port`` (None when the port was taken)."""

    begin: Callable[[Launcher, ServerBinary], Cluster]
    finish: Callable[[Launcher, ServerBinary, int, Cluster], ServiceInfo | None]


# The services whose slow first part can run while the run does other work: PostgreSQL's
# initdb.
BEGINNERS = {"postgres": Beginner(begin_postgres, start_postgres)}


class ServiceManager(Launcher):
    """Starts, tracks and stops the servers of one run; a context manager.

    ``binaries`` names the server to run ({"redis": path to redis-server, "postgres": folder
    holding initdb and postgres, "mysql": path to mariadbd}); without it, each is looked for in
    ``sources`` in order ("system", then "embedded": see arib.ground.binaries). ``environ``
    replaces os.environ for REDIS_URL / POSTGRES_URL / MYSQL_URL; ``port_picker`` chooses ports
    (tests force a taken one).
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
        super().__init__(ready_timeout=ready_timeout, stop_timeout=stop_timeout)
        self.port_retries = port_retries
        self._binaries = dict(binaries or {})
        self._sources = tuple(sources)
        self._environ = os.environ if environ is None else environ
        self._port_picker = port_picker
        self._handle_signals = handle_signals
        self._infos: dict[str, ServiceInfo] = {}
        self._previous: dict[int, Any] = {}
        self._atexit = False
        self._in_signal = False
        # On a user's Redis (REDIS_URL): (the run's key id, the URL, the pid that removes them).
        self._redis_run: tuple[str, str, int] | None = None
        self._begun: dict[str, Cluster] = {}  # begun (``begin``), not yet started

    # -- context management -------------------------------------------------------------

    def __enter__(self) -> ServiceManager:
        """Stop the servers on SIGINT, SIGTERM and SIGHUP too.

        Only a signal whose action is to end the process at once (SIG_DFL) gets a handler
        here: one that a Python handler turns into an exception (SIGINT's KeyboardInterrupt,
        arib.ground.interrupts) unwinds through ``__exit__``, which stops the servers after the
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
        """name -> ServiceInfo of every running service (a copy)."""
        return dict(self._infos)

    def _check_name(self, name: str) -> None:
        if name not in SERVICES:
            raise UnknownNameError(
                f"unknown service {name!r}: the bench runs {', '.join(SERVICES)}; "
                f"use one of those names"
            )

    def binary(self, name: str) -> ServerBinary | None:
        """The server program ``name`` would run (see arib.ground.binaries), or None."""
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
        if name == "mysql":
            return NotMeasured(
                "mysql",
                f"not measured: the MariaDB server (mariadbd) not found (looked in {where}; "
                f"apt-get install mariadb-server, or set MYSQL_URL)",
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

    def begin(self, name: str) -> bool:
        """Begin starting ``name`` without waiting, where its start has a slow first part
        (PostgreSQL's initdb), so that ``start`` finishes sooner; whether it is begun and not
        yet started (now or before). A no-op for a service that runs, is named by its
        variable, cannot run here, or has no such part. A failure to begin is left for
        ``start`` to report."""
        self._check_name(name)
        if name in self._begun:
            return True
        if (name in self._infos or name not in BEGINNERS
                or self._environ.get(ENV_VARS[name]) or self.availability(name) is not None):
            return False
        binary = self.binary(name)
        assert binary is not None
        if not self._atexit:  # before: a begin that fails halfway may leave a folder to remove
            atexit.register(self.stop_all)
            self._atexit = True
        with contextlib.suppress(ServiceError, OSError):
            self._begun[name] = BEGINNERS[name].begin(self, binary)
        return name in self._begun

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
            if name == "redis":  # the user's server: the run's keys are its own, and go
                self._redis_run = (redis_keys.begin_run(), info.url, os.getpid())
                redis_keys.expire_leftovers(info.url)
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
            binary = self.binary(name)
            assert binary is not None
            begun = self._begun.pop(name, None)  # the first attempt finishes it
            if begun is not None and begun.owner_pid == os.getpid():
                info = BEGINNERS[name].finish(self, binary, port, begun)
            else:
                info = STARTERS[name](self, binary, port)
            if info is not None:
                return info
        raise ServiceError(
            f"cannot start {name}: port {tried[-1]} on {HOST} was already in use, and so were "
            f"the ports tried before it ({', '.join(map(str, tried))}); the rule: a throwaway "
            f"server needs a free port; fix: free a port or set {ENV_VARS[name]}"
        )

    def _external(self, name: str, value: str) -> ServiceInfo:
        var = ENV_VARS[name]
        return EXTERNAL[name](value, var)

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
                f"{log_tail(server.log)}"
            )
        return info

    def stop(self, name: str) -> None:
        """Stop the service ``name`` if the manager started it; an external one is left alone."""
        self._infos.pop(name, None)
        server = self._servers.get(name)
        if server is not None:
            self.stop_server(server)

    def stop_all(self) -> None:
        """Stop every server this manager started; safe to call more than once.

        A forked child of the process that started a server leaves it alone: it is the
        parent's.
        """
        me = os.getpid()
        for name, cluster in list(self._begun.items()):
            if cluster.owner_pid == me:
                del self._begun[name]
                with contextlib.suppress(Exception):
                    cluster.stop(self)
        for name, server in list(self._servers.items()):
            if server.owner_pid == me:
                with contextlib.suppress(Exception):
                    self.stop(name)
        for root, maker in list(self._pending.items()):
            if maker == me:
                self.remove_folder(root)
        self._end_redis_run()
        self._infos.clear()
        if self._atexit:
            atexit.unregister(self.stop_all)
            self._atexit = False

    def _end_redis_run(self) -> None:
        """Delete every key this run wrote on a user's Redis (see redis_keys)."""
        if self._redis_run is None or self._redis_run[2] != os.getpid():
            return
        run, url, _ = self._redis_run
        self._redis_run = None
        if os.environ.get(redis_keys.RUN_ENV) == run:
            del os.environ[redis_keys.RUN_ENV]
        with contextlib.suppress(Exception):  # the server may be gone: the keys expire then
            redis_keys.delete_run_keys(url, run)

    def processes(self) -> Iterator[tuple[str, int, Path]]:
        """(name, pid, folder) of every server this manager runs (for reports and tests)."""
        for name, server in self._servers.items():
            yield name, server.process.pid, server.root
