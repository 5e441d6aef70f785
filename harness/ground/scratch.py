"""Private temporary folders: every temporary file of a run lives under one of them.

``folder(base)`` is this process's folder under ``base`` (default: the temporary folder), made
with ``mkdtemp`` (mode 0700, so no other user can plant or read anything in it) on first use
and removed when the process exits or ``cleanup()`` runs. ``prepare()`` makes them in a parent
before it forks; a forked child calls ``enter_child()`` and then works only in its own
sub-folder (named by its pid) of those folders, which the parent removes with
``remove_child()`` once it has reaped the child, also when it killed it. A child never makes
a top-level folder of its own, so a killed child leaves nothing behind once its parent is done.
Each folder records its owner (arib.ground.owners): if the process dies without removing it
(SIGKILL), its watcher removes it, or else the next command's start does.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import tempfile
from pathlib import Path

from arib.ground import owners

PREFIX = "arib-run-"
# realpath of a base -> (this run's folder there, pid of the process that removes it)
_FOLDERS: dict[str, tuple[Path, int]] = {}
_AT_EXIT: list[int] = []


def _key(base: str | None) -> str:
    return os.path.realpath(base or tempfile.gettempdir())


def fast_base() -> str | None:
    """A tmpfs base (/dev/shm) where SQLite's fsync costs nothing, when it is writable."""
    return "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None


def folder(base: str | None = None) -> Path:
    """This run's private folder under ``base`` (made once per process; 0700)."""
    key = _key(base)
    found = _FOLDERS.get(key)
    if found is not None and found[0].is_dir():
        return found[0]
    made = Path(tempfile.mkdtemp(prefix=PREFIX, dir=key))
    owners.claim(made)  # reaped with what it holds if this process dies without cleaning up
    _FOLDERS[key] = (made, os.getpid())
    if os.getpid() not in _AT_EXIT:
        _AT_EXIT.append(os.getpid())
        atexit.register(cleanup)
    return made


def prepare() -> None:
    """In a parent about to fork: make the folders its children will work in."""
    folder()
    fast = fast_base()
    if fast is not None:
        folder(fast)


def child_folder(base: str | None = None) -> Path:
    """This process's own folder inside ``folder(base)``: ``child-<pid>``, made on demand."""
    top = folder(base)
    name = f"child-{os.getpid()}"
    if top.name == name:  # the temporary folder of a child already points here
        return top
    path = top / name
    with contextlib.suppress(FileExistsError):
        path.mkdir(mode=0o700)
    return path


def enter_child() -> Path:
    """In a forked child: send every temporary file (``tempfile``, ``TMPDIR``) to its folder."""
    private = child_folder()
    tempfile.tempdir = str(private)
    os.environ["TMPDIR"] = str(private)
    _FOLDERS[_key(None)] = (private, os.getppid())
    return private


def remove_child(pid: int) -> None:
    """Remove what the (reaped or killed) child ``pid`` left in every folder of this run."""
    me = os.getpid()
    for made, owner in list(_FOLDERS.values()):
        if owner == me:
            shutil.rmtree(made / f"child-{pid}", ignore_errors=True)


def cleanup() -> None:
    """Remove every folder this process made (a forked child leaves its parent's alone)."""
    me = os.getpid()
    for key, (made, owner) in list(_FOLDERS.items()):
        if owner == me:
            shutil.rmtree(made, ignore_errors=True)
            _FOLDERS.pop(key, None)
