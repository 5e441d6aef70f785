"""Files a run writes and shares: atomic writes, a folder's lock, a writable folder."""

from __future__ import annotations

import contextlib
import fcntl
import os
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

from arib.ground.errors import UsageError

LOCK_NAME = ".arib.lock"


def atomic_write_text(path: Path, text: str, *, replace: bool = True) -> None:
    """Write ``text`` to ``path`` so that a reader sees the old file or the new, never half.

    With ``replace=False`` an existing file is never overwritten: FileExistsError instead.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        # mkstemp makes the file 0600: keep the mode of the file replaced, else 0644 (results
        # and baselines are shared and committed, never secret).
        os.fchmod(fd, stat.S_IMODE(path.stat().st_mode) if path.exists() else 0o644)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        if replace:
            os.replace(tmp, path)
        else:
            os.link(tmp, path)  # atomic, and fails if the name is taken
            os.unlink(tmp)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


@contextlib.contextmanager
def folder_lock(folder: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``folder`` (fcntl.flock on its ``.arib.lock``) for a
    read-modify-write, so that two runs in one checkout never lose each other's update."""
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / LOCK_NAME, "a") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def writable_folder(folder: Path, option: str = "--out") -> Path:
    """``folder``, created if need be, once a file could be made in it; UsageError if not.

    Checked before anything is measured, so that no result is lost at the end of a run.
    """
    try:
        if folder.exists() and not folder.is_dir():
            raise NotADirectoryError(f"{str(folder)!r} is a file")
        folder.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".arib-write-probe.", dir=folder)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        cause = exc.strerror or str(exc)
        if exc.filename and str(exc.filename) != str(folder):
            cause += f": {str(exc.filename)!r}"
        raise UsageError(
            f"{option} {str(folder)!r} is not a writable folder ({cause}): the results are "
            f"written there; pass a folder you can write to, e.g. {option} results"
        ) from None
    return folder
