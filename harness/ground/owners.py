"""Nothing outlives its run: every private folder names its owner, and what a dead owner left
is stopped and removed.

Each folder a run makes for itself (``scratch``'s ``arib-run-*``, a server's ``arib-redis-*`` /
``arib-pg-*``) holds a record, ``.arib-owner``: the pid and start time of the process that made
it and, for a server's folder, the server's pid, start time and stop signal. Two things read it:

- a **watcher**, one small process per owner (this file, run as a script with the standard
  library only: ``python -I -S owners.py PID START BASE...``), started with the first record and
  in a session of its own, so that a signal to the run's process group does not reach it. It
  waits for the owner to end, however it ends (SIGKILL included), then reaps every folder the
  owner recorded: it stops the server (its own signal -- SIGINT, PostgreSQL's fast shutdown,
  which ends its workers too --, then SIGKILL to its process group) and removes the folder. After
  a normal exit the owner has removed everything already and the watcher finds nothing.
- ``reap()`` at the start of every command (``arib.cli.main.main``): the same for the folders of
  any owner that is gone (its watcher killed too), said in one line.

A process is the same one only when its pid and its start time (``/proc/PID/stat``) both match,
so a reused pid is never taken for the owner or the server; a zombie counts as gone. A folder
without a record (being made right now, or by an older harness) is left alone.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path

RECORD = ".arib-owner"
PREFIXES = ("arib-run-", "arib-redis-", "arib-pg-")
STOP_WAIT_S = 10.0
_WATCHER: dict[int, int] = {}  # owner pid -> its watcher's pid


def _stat(pid: int) -> tuple[str, str] | None:
    """(state, start time in clock ticks since boot) of ``pid``, or None when there is none."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text.rpartition(")")[2].split()
    return fields[0], fields[19]


def start_time(pid: int) -> str | None:
    """The start time of ``pid`` (None where /proc does not tell)."""
    found = _stat(pid)
    return None if found is None else found[1]


def alive(pid: int, start: str | None) -> bool:
    """True while ``pid`` runs and is the process that started at ``start`` (not a zombie)."""
    found = _stat(pid)
    if found is None:
        if Path("/proc/self/stat").exists():
            return False
        try:  # no /proc here: the pid alone
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True
    state, started = found
    return state not in ("Z", "X") and (start is None or started == start)


def bases() -> list[str]:
    """Where run folders are made: the temporary folder, /tmp (PostgreSQL's fallback) and
    /dev/shm (``scratch.fast_base``), each once."""
    found: list[str] = []
    for base in (tempfile.gettempdir(), "/tmp", "/dev/shm"):
        real = os.path.realpath(base)
        if os.path.isdir(real) and real not in found:
            found.append(real)
    return found


def _write(folder: Path, record: dict[str, object]) -> None:
    """Write ``record`` into ``folder`` atomically (0600)."""
    tmp = folder / f"{RECORD}.{os.getpid()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w") as handle:
        json.dump(record, handle)
    os.replace(tmp, folder / RECORD)


def read(folder: Path) -> dict[str, object] | None:
    """The record of ``folder``; None when it has none (or a damaged one)."""
    try:
        record = json.loads((folder / RECORD).read_text())
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) and isinstance(record.get("pid"), int) else None


def claim(folder: Path) -> None:
    """Record this process as the owner of ``folder`` and make sure a watcher waits for it."""
    me = os.getpid()
    _write(folder, {"pid": me, "start": start_time(me), "servers": []})
    watch()


def add_server(folder: Path, pid: int, stop_signal: int) -> None:
    """Record the server ``pid`` that runs in ``folder`` (claimed before) and its stop signal."""
    record = read(folder) or {"pid": os.getpid(), "start": start_time(os.getpid())}
    servers = list(record.get("servers") or [])  # type: ignore[call-overload]
    servers.append({"pid": pid, "start": start_time(pid), "signal": int(stop_signal)})
    _write(folder, {**record, "servers": servers})


def drop_server(folder: Path, pid: int) -> None:
    """Forget the recorded server ``pid`` of ``folder``: it ended on its own (a helper run
    before the server, such as initdb), so the record lists only what runs."""
    record = read(folder)
    if record is None:
        return
    servers = [s for s in record.get("servers") or []  # type: ignore[attr-defined]
               if not (isinstance(s, dict) and s.get("pid") == pid)]
    _write(folder, {**record, "servers": servers})


def watch() -> None:
    """Start this process's watcher, once (see the module docstring)."""
    me = os.getpid()
    if me in _WATCHER:
        return
    process = subprocess.Popen(  # noqa: S603 - our own script, no shell
        [sys.executable, "-I", "-S", os.path.abspath(__file__), str(me),
         start_time(me) or "-", *bases()],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, start_new_session=True)
    process.returncode = 0  # never waited for: it outlives this process by design
    _WATCHER[me] = process.pid


def _stop_server(server: dict[str, object], wait_s: float) -> str | None:
    """Stop one recorded server if it still runs; what was done, or None."""
    pid, start = server.get("pid"), server.get("start")
    if not isinstance(pid, int) or not alive(pid, start if isinstance(start, str) else None):
        return None
    stop = server.get("signal")
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, int(stop) if isinstance(stop, int) else signal.SIGTERM)
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline and alive(pid, start if isinstance(start, str) else None):
        time.sleep(0.05)
    if not alive(pid, start if isinstance(start, str) else None):
        return f"server pid {pid} stopped"
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)  # its own session: the group is its and its workers'
    return f"server pid {pid} killed"


def reap_folder(folder: Path, record: dict[str, object], wait_s: float = STOP_WAIT_S) -> str:
    """Stop the servers ``record`` names, remove ``folder``; what was reaped, in words."""
    done = [what for server in record.get("servers") or []  # type: ignore[attr-defined]
            if isinstance(server, dict) and (what := _stop_server(server, wait_s))]
    shutil.rmtree(folder, ignore_errors=True)
    return f"{folder}" + (f" ({', '.join(done)})" if done else "")


def leftovers(where: Iterable[str], owner: tuple[int, str | None] | None = None
              ) -> list[tuple[Path, dict[str, object]]]:
    """The recorded folders under ``where`` whose owner is gone (only ``owner``'s, if given)."""
    found = []
    for base in where:
        try:
            names = [n for n in os.listdir(base) if n.startswith(PREFIXES)]
        except OSError:
            continue
        for name in sorted(names):
            folder = Path(base) / name
            record = read(folder)
            if record is None:
                continue
            pid, start = record["pid"], record.get("start")
            start = start if isinstance(start, str) else None
            if owner is not None and (pid, start) != owner:
                continue
            if not alive(pid, start):  # type: ignore[arg-type]
                found.append((folder, record))
    return found


def reap(where: Iterable[str] | None = None, wait_s: float = STOP_WAIT_S) -> list[str]:
    """Reap what every run whose owner is gone left under ``where`` (default ``bases()``)."""
    return [reap_folder(folder, record, wait_s)
            for folder, record in leftovers(bases() if where is None else where)]


def describe(reaped: list[str],
             whose: str = "runs that ended without cleaning up (their process is gone)") -> str:
    """The one line that says what was reaped."""
    return f"reaped {len(reaped)} folder(s) left by {whose}: {'; '.join(reaped)}"


def _wait_for(pid: int, start: str | None) -> None:
    """Return once ``pid`` (this watcher's parent) has ended."""
    if os.getppid() != pid:
        return
    pidfd = None
    with contextlib.suppress(AttributeError, OSError):
        pidfd = os.pidfd_open(pid)
    if pidfd is not None:
        select.select([pidfd], [], [])
        return
    while os.getppid() == pid and alive(pid, start):
        time.sleep(0.2)


def _main(argv: list[str]) -> int:
    """The watcher: wait for the owner, then reap what it recorded."""
    pid, start, where = int(argv[0]), (None if argv[1] == "-" else argv[1]), argv[2:]
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a terminal's ^C is for the run, not for us
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    _wait_for(pid, start)
    found = leftovers(where, (pid, start))
    reaped = [reap_folder(folder, record) for folder, record in found]
    if reaped:
        with contextlib.suppress(OSError):
            print(f"arib: {describe(reaped, f'the run of pid {pid}, killed before it cleaned up')}",
                  file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
