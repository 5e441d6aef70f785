"""Nothing outlives its run: a folder whose owner is gone is reaped with its server, by the
owner's watcher or at the next start; a live owner's folder, or one without a record, is not."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from arib.ground import owners
from arib.ground.services import ServiceManager

REPO = Path(__file__).resolve().parents[1]
HAVE_SERVERS = all(ServiceManager(environ={}).availability(name) is None
                   for name in ("redis", "postgres"))
pytestmark = pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs Linux /proc")


def _dead_pid() -> tuple[int, str | None]:
    """The pid and start time of a process that has ended (and was reaped)."""
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(0.2)"])
    start = owners.start_time(child.pid)
    child.wait()
    return child.pid, start


def _server(folder: Path) -> subprocess.Popen[bytes]:
    """A stand-in server: a process in its own session, listening on a port of 127.0.0.1."""
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent("""
            import socket, sys, time
            s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen()
            print(s.getsockname()[1], flush=True); time.sleep(120)""")],
        stdout=subprocess.PIPE, cwd=folder, start_new_session=True)


def _listening(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


def _gone(pid: int, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not owners.alive(pid, None):
            return True
        time.sleep(0.05)
    return False


def test_a_process_is_the_same_only_with_the_same_start_time():
    me = os.getpid()
    assert owners.alive(me, owners.start_time(me))
    assert not owners.alive(me, "1")  # a reused pid: another process
    pid, start = _dead_pid()
    assert not owners.alive(pid, start)


def test_a_dead_owners_folder_is_reaped_with_its_server_and_said(tmp_path):
    folder = tmp_path / "arib-redis-x"
    folder.mkdir()
    server = _server(folder)
    assert server.stdout is not None
    port = int(server.stdout.readline())
    pid, start = _dead_pid()
    (folder / owners.RECORD).write_text(json.dumps({
        "pid": pid, "start": start,
        "servers": [{"pid": server.pid, "start": owners.start_time(server.pid),
                     "signal": int(signal.SIGTERM)}]}))
    mine = tmp_path / "arib-run-live"  # a live owner's folder: left alone
    mine.mkdir()
    owners._write(mine, {"pid": os.getpid(), "start": owners.start_time(os.getpid())})
    unrecorded = tmp_path / "arib-pg-unrecorded"  # no record: being made, or an older harness's
    unrecorded.mkdir()
    try:
        reaped = owners.reap([str(tmp_path)])
        server.wait(timeout=10)
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
    assert reaped == [f"{folder} (server pid {server.pid} stopped)"]
    assert not folder.exists() and mine.is_dir() and unrecorded.is_dir()
    assert not _listening(port)
    assert owners.describe(reaped).startswith("reaped 1 folder(s) left by runs that ended")


def test_a_server_that_ignores_its_stop_signal_is_killed_with_its_group(tmp_path):
    folder = tmp_path / "arib-pg-x"
    folder.mkdir()
    stubborn = subprocess.Popen(
        [sys.executable, "-c", "import signal, time; signal.signal(signal.SIGINT, "
                               "signal.SIG_IGN); print(1, flush=True); time.sleep(120)"],
        stdout=subprocess.PIPE, start_new_session=True)
    assert stubborn.stdout is not None
    stubborn.stdout.readline()  # its handler is set
    record = {"pid": 1, "start": "0", "servers": [
        {"pid": stubborn.pid, "start": owners.start_time(stubborn.pid),
         "signal": int(signal.SIGINT)}]}
    try:
        assert owners.reap_folder(folder, record, wait_s=0.3).endswith(
            f"(server pid {stubborn.pid} killed)")
        assert stubborn.wait(timeout=10) == -signal.SIGKILL
    finally:
        if stubborn.poll() is None:
            stubborn.kill()
            stubborn.wait()


def test_the_watcher_reaps_what_its_owner_left_when_the_owner_is_killed(tmp_path):
    # The owner claims a folder (which starts its watcher), starts a server in it, and is
    # killed with SIGKILL: no finally, no atexit.
    owner = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import subprocess, sys, time
        from pathlib import Path
        from arib.ground import owners
        folder = Path({str(tmp_path)!r}) / "arib-redis-owned"
        folder.mkdir()
        owners.claim(folder)
        server = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"],
                                  start_new_session=True)
        owners.add_server(folder, server.pid, 15)
        print(server.pid, flush=True)
        time.sleep(120)""")], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(REPO), "TMPDIR": str(tmp_path)}, text=True)
    assert owner.stdout is not None and owner.stderr is not None
    line = owner.stdout.readline()
    assert line.strip(), owner.stderr.read()
    server = int(line)
    folder = tmp_path / "arib-redis-owned"
    assert folder.is_dir() and owners.alive(server, None)
    time.sleep(0.5)
    assert owners.alive(server, None)  # a child in a session of its own: killing the owner
    owner.kill()
    owner.wait()
    said = owner.stderr.read()  # EOF once the watcher, which shares it, is done
    assert _gone(server) and not folder.exists()
    assert f"reaped 1 folder(s) left by the run of pid {owner.pid}, killed before it " \
           f"cleaned up: {folder} (server pid {server} stopped)" in said


# --------------------------------------------------------------------------- a real run


def _recorded(owner: int) -> dict[Path, dict]:
    """The folders (and their records) that ``owner`` made, in every base."""
    found = {}
    for base in owners.bases():
        for folder in Path(base).glob("arib-*"):
            record = owners.read(folder)
            if record is not None and record["pid"] == owner:
                found[folder] = record
    return found


def _watcher_of(owner: int) -> int | None:
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmd = (entry / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if len(cmd) > 4 and cmd[3].endswith(b"owners.py") and cmd[4] == str(owner).encode():
                return int(entry.name)
    return None


@pytest.mark.slow
@pytest.mark.skipif(not HAVE_SERVERS, reason="no redis-server or PostgreSQL binaries")
@pytest.mark.parametrize("watcher", ["alive", "killed too"])
def test_a_bench_killed_with_sigkill_leaves_no_server_port_or_folder(watcher, tmp_path):
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("REDIS_URL", None)
    env.pop("POSTGRES_URL", None)
    bench = subprocess.Popen(
        [sys.executable, "-m", "arib", "bench", "--lanes", "redis-from-url,sqlalchemy-postgres",
         "--checks", "ARIB-REPLAY-001", "--param", "ARIB-REPLAY-001.trials=40", "--reruns", "1",
         "--out", str(tmp_path / "results"), "--quiet"],
        cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        servers, workers, ports = [], [], []
        # Until both servers run, PostgreSQL with its workers and each listening: a server's
        # record is written when it is started, before it has forked its workers or listens.
        while time.monotonic() < deadline and bench.poll() is None:
            made = _recorded(bench.pid)
            servers = [s for record in made.values() for s in record["servers"]]
            workers = [int(p) for s in servers for p in subprocess.run(
                ["ps", "-o", "pid=", "--ppid", str(s["pid"])], capture_output=True,
                text=True, check=False).stdout.split()]  # PostgreSQL's
            ports = [int(line.split()[3].rsplit(":", 1)[1]) for line in subprocess.run(
                ["ss", "-ltnpH"], capture_output=True, text=True, check=False).stdout.splitlines()
                if any(f"pid={s['pid']}," in line for s in servers)]
            if len(servers) == 2 and workers and len(ports) == 2:
                break
            time.sleep(0.05)
        assert len(servers) == 2, made
        assert any(f.name.startswith("arib-run-") for f in made)
        assert workers
        assert len(ports) == 2 and all(_listening(port) for port in ports)
        if watcher == "killed too":  # nothing but the next start can reap it then
            watcher_pid = _watcher_of(bench.pid)
            assert watcher_pid is not None
            os.kill(watcher_pid, signal.SIGKILL)
        bench.kill()
    finally:
        if bench.poll() is None:
            bench.kill()
        bench.wait()
    after = subprocess.run([sys.executable, "-m", "arib", "list"], cwd=REPO, env=env,
                           capture_output=True, text=True, timeout=120, check=False)
    assert after.returncode == 0, after.stderr
    pids = [s["pid"] for s in servers] + workers
    assert all(_gone(pid) for pid in pids), [p for p in pids if owners.alive(p, None)]
    assert not any(_listening(port) for port in ports)
    assert [folder for folder in made if folder.exists()] == []
    if watcher == "killed too":
        line = [x for x in after.stderr.splitlines() if x.startswith("reaped ")]
        assert len(line) == 1 and all(str(folder) in line[0] for folder in made), after.stderr
