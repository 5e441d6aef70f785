"""SIGINT, SIGTERM and SIGHUP stop a run the same way: results kept, nothing left running."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from arib.ground.interrupts import Interrupted, exit_status, received, stops_raise
from arib.ground.services import ServiceManager

REPO = Path(__file__).resolve().parents[1]
HAVE_SERVERS = all(ServiceManager(environ={}).availability(name) is None
                   for name in ("redis", "postgres"))


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_each_stop_signal_raises_interrupted_and_handlers_come_back(signum: int) -> None:
    before = signal.getsignal(signum)
    with pytest.raises(Interrupted) as caught, stops_raise():
        os.kill(os.getpid(), signum)
        time.sleep(5)  # the handler raises before this ends
    assert isinstance(caught.value, KeyboardInterrupt)  # so every partial-result path runs
    assert caught.value.signum == signum and received() == signum
    assert exit_status(signum) == 128 + signum
    assert signal.getsignal(signum) == before


def test_a_second_signal_does_not_cut_the_cleanup_of_the_first_short() -> None:
    cleaned = False
    with pytest.raises(Interrupted) as caught, stops_raise():
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)
        finally:
            os.kill(os.getpid(), signal.SIGHUP)  # ignored while the first stop is handled
            time.sleep(0.05)
            cleaned = True
    assert cleaned and caught.value.signum == signal.SIGTERM


def test_an_ignored_sighup_stays_ignored() -> None:
    previous = signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        with stops_raise():
            os.kill(os.getpid(), signal.SIGHUP)
            time.sleep(0.05)
            assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGHUP, previous)


def test_a_forked_child_that_inherited_the_handler_dies_of_the_signal() -> None:
    with stops_raise():
        pid = os.fork()
        if pid == 0:
            try:
                os.kill(os.getpid(), signal.SIGTERM)
                time.sleep(5)
            finally:
                os._exit(3)  # reached only if the handler raised in the child
        _, status = os.waitpid(pid, 0)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGTERM


# --------------------------------------------------------------------------- a real bench run


def _stat(pid: int) -> tuple[str, int] | None:
    """(state, parent pid) of a process, None when it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return fields[0], int(fields[1])


def _descendants(root: int) -> dict[int, str]:
    """pid -> command line of every live process below ``root``."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            found = _stat(int(entry.name))
            if found is not None and found[0] != "Z":
                parents[int(entry.name)] = found[1]
    below: dict[int, str] = {}
    frontier = [root]
    while frontier:
        parent = frontier.pop()
        for pid, ppid in parents.items():
            if ppid == parent and pid not in below:
                try:
                    below[pid] = Path(f"/proc/{pid}/cmdline").read_bytes().replace(
                        b"\0", b" ").decode(errors="replace")
                except OSError:
                    continue
                frontier.append(pid)
    return below


def _running(pid: int) -> bool:
    found = _stat(pid)
    return found is not None and found[0] != "Z"


def _server_folder(pid: int) -> Path:
    """The private folder of a server we started (its working folder, or the data's parent)."""
    cwd = Path(os.readlink(f"/proc/{pid}/cwd"))
    return cwd.parent if cwd.name == "data" else cwd


@pytest.mark.slow
@pytest.mark.skipif(not HAVE_SERVERS, reason="no redis-server or PostgreSQL binaries")
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_a_stopped_bench_writes_what_it_measured_and_leaves_nothing(
        signum: int, tmp_path: Path) -> None:
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    out = tmp_path / "results"
    # a progress line per unit: the test stops the bench once its first lane is done
    env = {**os.environ, "TMPDIR": str(tmp), "PYTHONPATH": str(REPO),
           "ARIB_PROGRESS_EVERY_S": "0"}
    env.pop("REDIS_URL", None)
    env.pop("POSTGRES_URL", None)
    bench = subprocess.Popen(
        [sys.executable, "-m", "arib", "bench", "--lanes", "redis-from-url,sqlalchemy-postgres",
         "--checks", "ARIB-REPLAY-001", "--param", "ARIB-REPLAY-001.trials=40",
         "--reruns", "1", "--out", str(out)],
        cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        assert bench.stdout is not None
        lines: list[str] = []
        for line in bench.stdout:  # the redis lane is measured, the PostgreSQL one runs
            lines.append(line)
            if line.startswith("[bench] 1/2"):
                break
        else:
            pytest.fail("the bench ended before its first lane: " + "".join(lines[-20:]))
        deadline = time.monotonic() + 10
        while True:  # until the PostgreSQL lane's child is forked
            running = _descendants(bench.pid)
            lane_children = [pid for pid, cmd in running.items() if "arib bench" in cmd]
            if lane_children or time.monotonic() > deadline:
                break
            time.sleep(0.02)
        servers = {pid: cmd for pid, cmd in running.items()
                   if "redis-server" in cmd or "postgres -D" in cmd}
        folders = [_server_folder(pid) for pid in servers]
        assert len(servers) == 2 and all(folder.is_dir() for folder in folders), running
        assert lane_children, running
        bench.send_signal(signum)
        rest = bench.stdout.read()
        code = bench.wait(timeout=60)
    finally:
        if bench.poll() is None:  # a failed assertion above: let the bench clean up first
            bench.terminate()
            try:
                bench.wait(timeout=60)
            except subprocess.TimeoutExpired:
                bench.kill()
                bench.wait()
    assert code == 128 + signum, rest
    assert f"interrupted by {signal.Signals(signum).name}" in rest
    deadline = time.monotonic() + 10
    while any(_running(pid) for pid in running) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert [pid for pid in running if _running(pid)] == []  # servers, backends, lane child
    assert [folder for folder in folders if folder.exists()] == []
    assert list(tmp.iterdir()) == []  # no arib-run-*, arib-redis-*, arib-pg-* left
    (result,) = out.glob("*.json")
    document = json.loads(result.read_text())
    assert document["parameters"]["complete"] is False
    assert [f["target"] for f in document["findings"]] == ["redis-from-url"]
    assert sorted(document["services"]) == ["postgres", "redis"]  # recorded before the stop


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs Linux /proc")
def test_a_tool_run_in_its_own_group_dies_whole_when_the_run_is_stopped(tmp_path):
    from arib.ground.interrupts import run_in_group

    pidfile = tmp_path / "grandchild.pid"
    script = f"sleep 60 & echo $! > {pidfile}; wait"

    def stop_when_the_grandchild_runs() -> None:
        deadline = time.monotonic() + 30
        while not pidfile.exists() or not pidfile.read_text().strip():
            if time.monotonic() > deadline:
                break
            time.sleep(0.02)
        os.kill(os.getpid(), signal.SIGINT)

    threading.Thread(target=stop_when_the_grandchild_runs, daemon=True).start()
    with pytest.raises(KeyboardInterrupt):
        run_in_group(["sh", "-c", script])
    grandchild = int(pidfile.read_text())
    deadline = time.monotonic() + 10
    while _alive(grandchild) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not _alive(grandchild)  # the tool's own child went with it


def test_a_stop_while_the_tool_starts_still_kills_its_group(tmp_path, monkeypatch):
    # The stop lands inside Popen, once the tool runs but before its process is returned:
    # it is held until the group can be killed, then delivered.
    import subprocess

    from arib.ground import interrupts

    pidfile = tmp_path / "grandchild.pid"
    real = subprocess.Popen

    class StoppedWhileStarting(real):  # type: ignore[misc, valid-type]
        def __init__(self, *args, **kwargs):  # type: ignore[no-untyped-def]
            super().__init__(*args, **kwargs)
            deadline = time.monotonic() + 30
            while not pidfile.exists() or not pidfile.read_text().strip():
                if time.monotonic() > deadline:
                    break
                time.sleep(0.02)
            os.kill(os.getpid(), signal.SIGINT)

    monkeypatch.setattr(interrupts.subprocess, "Popen", StoppedWhileStarting)
    with pytest.raises(KeyboardInterrupt):
        interrupts.run_in_group(["sh", "-c", f"sleep 60 & echo $! > {pidfile}; wait"])
    grandchild = int(pidfile.read_text())
    deadline = time.monotonic() + 10
    while _alive(grandchild) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not _alive(grandchild)
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # handler restored


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_a_stop_whose_exception_was_dropped_still_ends_the_scheduling_loop():
    # A signal handled inside an at-fork hook has its exception dropped ("Exception
    # ignored"); the runner's loop asks again between steps, so the stop still ends the run.
    from arib.ground import interrupts
    from arib.ground.child import run_jobs

    with stops_raise():
        interrupts._received.append(int(signal.SIGTERM))  # received, its exception lost
        with pytest.raises(Interrupted) as caught:
            run_jobs([lambda: 1], workers=1, timeout_s=30)
        assert caught.value.signum == signal.SIGTERM
    interrupts._received.clear()
    assert run_jobs([lambda: 2], workers=1, timeout_s=30)[0].value == 2  # outside: no stop


def test_alarm_after_ends_a_call_that_blocks_the_main_thread():
    from arib.ground.interrupts import Overdue, alarm_after

    started = time.monotonic()
    with pytest.raises(Overdue, match="no answer in 0.2 s"):
        with alarm_after(0.2):
            time.sleep(10)
    assert time.monotonic() - started < 5
    with alarm_after(0.2):  # in time: nothing raised, and the alarm is off afterwards
        pass
    time.sleep(0.3)  # no alarm comes after the block
