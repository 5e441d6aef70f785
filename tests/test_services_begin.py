"""Tests of beginning a service's start early (``ServiceManager.begin``, ``begin_postgres``,
``arib.lanes.begin_services``): PostgreSQL's initdb runs while the run does other work, the
start finishes the begun cluster, and a begun cluster never started leaves nothing behind.

Real processes only: the PostgreSQL tests run the real initdb and server (skipped where the
binaries or asyncpg are missing); the failing initdb is a real program that exits non-zero.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from arib.ground import owners
from arib.ground.errors import ServiceError
from arib.ground.services import ServiceManager, postgres_query
from arib.lanes import begin_services
from arib.targets.registry import get_target

HAVE_POSTGRES = (
    importlib.util.find_spec("asyncpg") is not None
    and ServiceManager(environ={}).availability("postgres") is None
)
needs_postgres = pytest.mark.skipif(
    not HAVE_POSTGRES, reason="PostgreSQL server binaries or asyncpg not installed"
)


def _gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return state == "Z"


@pytest.fixture
def fake_postgres() -> Iterator[Path]:
    """A PostgreSQL bin folder whose initdb prints a line and exits with code 3 (in a folder
    any user may enter: as root, the cluster's programs run as an unprivileged user)."""
    folder = Path(tempfile.mkdtemp(prefix="arib-test-fakepg-", dir="/tmp"))
    folder.chmod(0o755)
    for name, body in (("initdb", "echo 'initdb: the disk is on fire' >&2; exit 3"),
                       ("postgres", "exit 1")):
        program = folder / name
        program.write_text(f"#!/bin/sh\n{body}\n")
        program.chmod(program.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def test_begin_is_a_no_op_without_a_slow_first_part_or_a_server_to_run(tmp_path: Path) -> None:
    missing = ServiceManager(environ={}, binaries={"postgres": str(tmp_path / "none")})
    assert missing.begin("postgres") is False  # no binaries: start says why, not begin
    external = ServiceManager(environ={"POSTGRES_URL": "postgresql+asyncpg://u:p@127.0.0.1:1/d"})
    assert external.begin("postgres") is False  # the user's own server: nothing to make
    assert ServiceManager(environ={}).begin("redis") is False  # its start has no slow part
    with pytest.raises(Exception, match="unknown service 'mongo'"):
        ServiceManager(environ={}).begin("mongo")


def test_a_failed_initdb_is_reported_by_start_and_leaves_no_folder(fake_postgres: Path) -> None:
    with ServiceManager(environ={}, binaries={"postgres": str(fake_postgres)}) as manager:
        assert manager.begin("postgres") is True
        cluster = manager._begun["postgres"]  # noqa: SLF001 - what begin made, to follow it
        with pytest.raises(ServiceError) as caught:
            manager.start("postgres")
    text = str(caught.value)
    assert "initdb" in text and "failed with code 3" in text and "the disk is on fire" in text
    assert not cluster.root.exists()


@needs_postgres
def test_a_begun_cluster_never_started_is_stopped_and_removed() -> None:
    with ServiceManager(environ={}) as manager:
        assert manager.begin("postgres") is True
        assert manager.begin("postgres") is True  # once: the same cluster
        cluster = manager._begun["postgres"]  # noqa: SLF001
        assert cluster.root.is_dir() and stat.S_IMODE(cluster.root.stat().st_mode) == 0o700
        record = owners.read(cluster.root)  # a run killed meanwhile has initdb stopped too
        assert record is not None and [s["pid"] for s in record["servers"]] == [
            cluster.initdb.pid]
    assert _gone(cluster.initdb.pid)
    assert not cluster.root.exists()
    assert manager.services == {}


@needs_postgres
@pytest.mark.slow
def test_start_finishes_the_begun_cluster() -> None:
    with ServiceManager(environ={}) as manager:
        assert manager.begin("postgres") is True
        cluster = manager._begun["postgres"]  # noqa: SLF001
        info = manager.start("postgres")
        assert info.root == str(cluster.root)  # the begun one, not a second initdb
        record = owners.read(cluster.root)  # what the owner's watcher would stop: the server
        assert record is not None and [s["pid"] for s in record["servers"]] == [info.pid]
        assert manager.begin("postgres") is False  # it runs: nothing left to begin
        assert postgres_query(info.url, "SELECT 1") == 1
        assert not (cluster.root / "pwfile").exists()  # the password file lives no longer
    assert not cluster.root.exists()


@needs_postgres
def test_a_forked_child_leaves_its_parents_begun_cluster_alone() -> None:
    with ServiceManager(environ={}) as manager:
        manager.begin("postgres")
        cluster = manager._begun["postgres"]  # noqa: SLF001
        pid = os.fork()
        if pid == 0:  # the child: its stop_all must not touch the parent's initdb or folder
            manager.stop_all()
            os._exit(0)
        os.waitpid(pid, 0)
        assert cluster.root.is_dir()
        assert cluster.initdb.poll() in (None, 0)
    assert not cluster.root.exists()


def test_begin_services_begins_only_the_services_of_lanes_that_can_run(tmp_path: Path) -> None:
    lanes = [get_target("reference"), get_target("sqlite-file")]
    manager = ServiceManager(environ={}, binaries={"postgres": str(tmp_path / "none")})
    assert begin_services(lanes, manager) is False  # no lane with a service
    assert begin_services([get_target("sqlalchemy-postgres")], manager) is False  # no server


def test_services_for_checks_runs_meanwhile_only_while_an_initdb_runs(tmp_path: Path) -> None:
    from arib.checks.registry import get_check
    from arib.lanes import services_for_checks

    called: list[str] = []
    window = get_check("ARIB-WINDOW-001")  # paired with mutants of sqlalchemy-postgres
    manager = ServiceManager(environ={}, binaries={"postgres": str(tmp_path / "none")})
    services = services_for_checks([window], manager, meanwhile=lambda: called.append("x"))
    assert called == [] and "postgres" not in services  # nothing began: nothing to overlap


@needs_postgres
@pytest.mark.slow
def test_services_for_checks_overlaps_meanwhile_with_the_initdb() -> None:
    from arib.checks.registry import get_check
    from arib.lanes import services_for_checks

    seen: list[bool] = []
    with ServiceManager(environ={}) as manager:
        def meanwhile() -> None:  # runs while the begun cluster waits to be started
            seen.append("postgres" in manager._begun and "postgres" not in manager.services)  # noqa: SLF001

        services = services_for_checks([get_check("ARIB-WINDOW-001")], manager,
                                       meanwhile=meanwhile)
        assert seen == [True]
        assert services["postgres"] == manager.services["postgres"]
        assert postgres_query(services["postgres"], "SELECT 1") == 1
