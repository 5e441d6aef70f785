"""Tests of arib.ground.services.mariadb_server (and mysqlclient): a real throwaway MariaDB.

Nothing here mocks the server: the tests that start one are skipped when Debian's
mariadb-server is not installed (``apt-get install mariadb-server``; .ci/run installs it).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from arib.ground.errors import ServiceError
from arib.ground.services import (
    NotMeasured,
    ServiceManager,
    free_port,
    mask_url,
    mysql_database_url,
    mysql_query,
    parse_mysql_url,
)
from arib.ground.services.mariadb_server import greeting

HAVE_MARIADB = ServiceManager(environ={}).availability("mysql") is None
needs_mariadb = pytest.mark.skipif(not HAVE_MARIADB,
                                   reason="mariadb-server (mariadbd) is not installed")
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


def _wait_gone(pid: int, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not _alive(pid)


def _ps() -> str:
    return subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True,
                          check=False).stdout


@pytest.fixture
def temp_base(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Make the manager's temporary folders under a folder of this test, to check leftovers."""
    base = tmp_path / "tmp"
    base.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(base))
    return base


@pytest.fixture(scope="module")
def mariadb() -> Iterator[str]:
    """The URL of one throwaway MariaDB for the tests that only query it."""
    if not HAVE_MARIADB:
        pytest.skip("mariadb-server (mariadbd) is not installed")
    with ServiceManager(environ={}) as manager:
        yield manager.start("mysql").url


@needs_mariadb
def test_starts_answers_a_query_and_leaves_nothing(temp_base: Path) -> None:
    with ServiceManager(environ={}) as manager:
        info = manager.start("mysql")
        assert manager.start("mysql") is info  # idempotent per name
        parts = urlsplit(info.url)
        assert (parts.scheme, parts.hostname, parts.port, parts.path) == (
            "mysql", "127.0.0.1", info.port, "/arib")
        assert parts.username == "bench" and len(parts.password or "") == 32
        assert "MariaDB" in info.version and info.version[0].isdigit()  # no 5.5.5- prefix
        assert not info.external and info.pid is not None and _alive(info.pid)
        root = Path(info.root or "")
        assert root.is_dir() and (root.stat().st_mode & 0o777) == 0o700
        assert (root / "mysqld.sock").is_socket()
        assert not (root / "init.sql").exists()  # the password's file is gone once up
        if os.geteuid() == 0:
            assert info.settings["os_user"] != "root"
        assert str(mysql_query(info.url, "SELECT 6*7")) == "42"
        assert mysql_query(info.url, "SELECT @@bind_address") == "127.0.0.1"
        assert str(mysql_query(info.url, "SELECT @@port")) == str(info.port)
        # Its temporary tables stay in its own folder: a starting MariaDB removes the #sql*
        # files of its tmpdir, which in a shared /tmp are other servers' live tables.
        assert mysql_query(info.url, "SELECT @@tmpdir") == str(root / "tmp")
        assert ((root / "tmp").stat().st_mode & 0o777) == 0o700
        assert manager.services == {"mysql": info.url}
        assert info.url not in json.dumps(info.to_json())
        pid = info.pid
    assert _wait_gone(pid)
    assert not root.exists()
    assert list(temp_base.iterdir()) == []


@needs_mariadb
def test_refuses_a_client_without_the_password(mariadb: str) -> None:
    password = urlsplit(mariadb).password or ""
    for url in (mariadb.replace(f":{password}@", "@"),
                mariadb.replace(password, "wrong-password")):
        with pytest.raises(Exception, match="(?i)access denied"):
            mysql_query(url, "SELECT 1")
    assert password not in _ps()


@needs_mariadb
def test_a_database_of_ones_own(mariadb: str) -> None:
    url = mysql_database_url(mariadb, "lg_test_own")
    assert urlsplit(url).path == "/lg_test_own"
    assert mysql_query(url, "SELECT DATABASE()") == "lg_test_own"
    assert mysql_database_url(mariadb, "lg_test_own") == url  # again: the same, no error
    with pytest.raises(ServiceError, match="not allowed"):
        mysql_database_url(mariadb, "x`; DROP DATABASE arib; --")


@needs_mariadb
@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_stops_the_server_and_removes_its_folder(signum: int) -> None:
    script = textwrap.dedent(
        """
        import json, time
        from arib.ground.services import ServiceManager
        with ServiceManager(environ={}) as manager:
            info = manager.start("mysql")
            print(json.dumps({"pid": info.pid, "root": info.root}), flush=True)
            time.sleep(60)
        """
    )
    child = subprocess.Popen([sys.executable, "-c", script], cwd=REPO, stdout=subprocess.PIPE,
                             text=True)
    try:
        assert child.stdout is not None
        started = json.loads(child.stdout.readline())
        assert _alive(started["pid"])
        child.send_signal(signum)
        code = child.wait(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()
    assert code == -signum
    assert _wait_gone(started["pid"])
    assert not Path(started["root"]).exists()


def test_missing_binary_is_not_measured_with_the_cause(tmp_path: Path) -> None:
    manager = ServiceManager(environ={}, binaries={"mysql": str(tmp_path / "no-mariadbd")})
    missing = manager.availability("mysql")
    assert isinstance(missing, NotMeasured) and missing.name == "mysql"
    assert missing.reason.startswith("not measured: the MariaDB server (mariadbd) not found")
    assert "apt-get install mariadb-server" in missing.reason and "MYSQL_URL" in missing.reason
    assert manager.ensure("mysql") == missing
    with pytest.raises(ServiceError, match="mariadbd"):
        manager.start("mysql")
    nowhere = ServiceManager(environ={}, sources=())
    assert "nowhere" in (nowhere.availability("mysql") or NotMeasured("", "")).reason


@pytest.mark.parametrize("value", [
    "postgresql://user:secret@127.0.0.1:3306/db",
    "mysql://user:secret@127.0.0.1:3306",
    "mysql://user:secret@:3306/db",
    "mysql://user:secret@127.0.0.1:notaport/db",
])
def test_malformed_url_names_variable_masked_value_and_form(value: str) -> None:
    with ServiceManager(environ={"MYSQL_URL": value}) as manager, \
            pytest.raises(ServiceError) as caught:
        manager.start("mysql")
    message = str(caught.value)
    assert message.startswith("MYSQL_URL=") and "secret" not in message
    assert "mysql://user:pass@127.0.0.1:3306/db" in message and "unset MYSQL_URL" in message


def test_parse_mysql_url_takes_the_drivers_schemes() -> None:
    assert parse_mysql_url("mysql+pymysql://u:p@127.0.0.1:1/d") == "mysql://u:p@127.0.0.1:1/d"
    assert parse_mysql_url("mariadb://u@h/d") == "mysql://u@h/d"


def test_a_server_that_refuses_names_the_masked_url_and_the_fix() -> None:
    port = free_port()  # nothing listens there
    url = f"mysql://user:secret@127.0.0.1:{port}/db"
    with ServiceManager(environ={"MYSQL_URL": url}) as manager:
        with pytest.raises(ServiceError) as caught:
            manager.start("mysql")
        assert manager.services == {}
    message = str(caught.value)
    assert f"127.0.0.1:{port}" in message and mask_url(url) in message
    assert "secret" not in message and "unset it" in message


def test_greeting_of_a_server_that_speaks_another_protocol() -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)

        def answer() -> None:
            conn, _ = server.accept()
            with conn:
                conn.sendall(b"\x05\x00\x00\x00+PONG")

        thread = threading.Thread(target=answer)
        thread.start()
        with pytest.raises(ServiceError, match="no MySQL protocol 10 greeting"):
            greeting(server.getsockname())
        thread.join()


@needs_mariadb
def test_environment_url_uses_existing_server_and_leaves_it_running(mariadb: str) -> None:
    with ServiceManager(environ={"MYSQL_URL": mariadb}) as user:
        info = user.start("mysql")
        assert info.external and info.pid is None and "MariaDB" in info.version
        assert list(user.processes()) == []
    assert str(mysql_query(mariadb, "SELECT 1")) == "1"


@needs_mariadb
def test_a_taken_port_is_retried_with_another(temp_base: Path) -> None:
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen(1)
        taken = held.getsockname()[1]
        ports = iter([taken, free_port()])
        with ServiceManager(environ={}, port_picker=lambda: next(ports)) as manager:
            info = manager.start("mysql")
            assert info.port != taken
            assert str(mysql_query(info.url, "SELECT 1")) == "1"
    assert list(temp_base.iterdir()) == []
