"""What the noxfile needs, in the standard library only (nox's own Python imports it).

Finding the interpreters where `.ci/run` finds them (pyenv's versions folder, `uv python
find`, PATH), making them visible to nox by name, and reading `--versions` against the lock
files, so that a missing interpreter or an unknown SDK version stops a session with the fix.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

LOCK_DIR = Path(__file__).parent / "locks"
# What draws the pictures of the reports (the cross-version heat map): the `report` extra of
# pyproject.toml, which the sessions that run `compare` install (a test checks they agree).
REPORT_REQUIREMENTS = ("matplotlib==3.10.9",)
_PROBE = "import sys; print('%d.%d' % sys.version_info[:2])"


def _runs_as(path: Path, version: str) -> bool:
    """True when ``path`` is an interpreter that runs and reports ``version`` (X.Y)."""
    try:
        done = subprocess.run([str(path), "-c", _PROBE], capture_output=True, text=True,
                              timeout=30, check=False)
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0 and done.stdout.strip() == version


def _pyenv_candidates(version: str, env: Mapping[str, str]) -> list[Path]:
    """``$PYENV_ROOT/versions/X.Y.Z/bin/pythonX.Y``, the newest patch release first."""
    root = Path(env.get("PYENV_ROOT") or Path(env.get("HOME", "~")).expanduser() / ".pyenv")
    folder = root / "versions"
    if not folder.is_dir():
        return []
    rule = re.compile(rf"^{re.escape(version)}\.(\d+)$")
    patches = sorted(((int(m.group(1)), p.name) for p in folder.iterdir()
                      if (m := rule.match(p.name))), reverse=True)
    return [folder / name / "bin" / f"python{version}" for _, name in patches]


def _uv_candidates(version: str, env: Mapping[str, str], uv: str | None) -> list[Path]:
    """What ``uv python find X.Y`` names, outside any project or virtual environment."""
    if uv is None:
        return []
    clean = {k: v for k, v in env.items() if k not in ("VIRTUAL_ENV", "UV_PYTHON")}
    clean["UV_PYTHON_DOWNLOADS"] = "never"
    try:
        done = subprocess.run([uv, "python", "find", "--no-project", "--no-config", version],
                              capture_output=True, text=True, timeout=60, check=False,
                              env=clean, cwd="/")
    except (OSError, subprocess.SubprocessError):
        return []
    out = done.stdout.strip()
    return [Path(out)] if done.returncode == 0 and out else []


def _path_candidates(version: str, env: Mapping[str, str]) -> list[Path]:
    """Every ``pythonX.Y`` on PATH, in PATH order (a pyenv shim that does not resolve fails
    the probe and is passed over)."""
    found = []
    for entry in filter(None, env.get("PATH", "").split(os.pathsep)):
        candidate = Path(entry) / f"python{version}"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            found.append(candidate)
    return found


def find_python(version: str, env: Mapping[str, str] | None = None,
                uv: str | None = None) -> Path | None:
    """The interpreter of Python ``version`` (X.Y), or None: pyenv's versions folder first,
    then `uv python find`, then PATH; each candidate must run and report that version."""
    env = os.environ if env is None else env
    for candidate in (*_pyenv_candidates(version, env), *_uv_candidates(version, env, uv),
                      *_path_candidates(version, env)):
        if _runs_as(candidate, version):
            return candidate
    return None


def missing_python_fix(version: str, env: Mapping[str, str] | None = None) -> str:
    """One line: which Python is missing, where it was looked for, and how to provide it."""
    env = os.environ if env is None else env
    root = env.get("PYENV_ROOT") or "~/.pyenv"
    return (f"Python {version} not found (looked in {root}/versions/{version}.*, "
            f"`uv python find {version}` and python{version} on PATH): install it with "
            f"`pyenv install {version}` or `uv python install {version}`, or put "
            f"python{version} on PATH")


def find_uv(env: Mapping[str, str] | None = None) -> str | None:
    """The uv executable: on PATH, else the one installed beside nox (`pip install uv`)."""
    env = os.environ if env is None else env
    on_path = shutil.which("uv", path=env.get("PATH", ""))
    if on_path:
        return on_path
    try:
        from uv import find_uv_bin  # type: ignore[import-not-found]
    except ImportError:
        return None
    try:
        return str(find_uv_bin())
    except FileNotFoundError:
        return None


def link_pythons(found: Mapping[str, Path | None], folder: Path) -> Path:
    """A folder of ``pythonX.Y`` links to the interpreters found, to put first on PATH.

    nox names its sessions after the version (``selftest-3.12``) and looks the version up on
    PATH; the links hand it the full path of each interpreter found here. The link of a
    version not found (None) is removed, so that an old link never stands in for it.
    """
    folder.mkdir(parents=True, exist_ok=True)
    for version, path in found.items():
        link = folder / f"python{version}"
        if path is None:
            link.unlink(missing_ok=True)
            continue
        tmp = folder / f".python{version}.{os.getpid()}"
        tmp.unlink(missing_ok=True)
        tmp.symlink_to(path)
        os.replace(tmp, link)  # atomic: a concurrent nox run sees the old link or the new
    return folder


def locked_versions(lock_dir: Path = LOCK_DIR, family: str = "openai-agents") -> list[str]:
    """The versions of a family's distribution that have a lock file, oldest first."""
    names = (p.name.removeprefix(f"{family}-").removesuffix(".txt")
             for p in lock_dir.glob(f"{family}-*.txt"))
    return sorted(names, key=lambda v: tuple(int(x) if x.isdigit() else 0
                                             for x in v.split(".")))


def unlocked_version_error(version: str, lock_dir: Path = LOCK_DIR,
                           family: str = "openai-agents") -> str | None:
    """None when ``version`` has a lock file, else one line naming it and the fix."""
    known = locked_versions(lock_dir, family)
    if version in known:
        return None
    return (f"unavailable SDK version {version!r}: the bench has lock files for "
            f"{', '.join(known) or f'no {family} version'}; create one with "
            f"`nox -s lock -- {version}`")


def split_versions(args: Sequence[str], default: Sequence[str], every: Sequence[str],
                   lock_dir: Path = LOCK_DIR) -> tuple[list[str], list[str], str | None]:
    """Take ``--versions a,b`` (or ``all``) out of the bench's arguments.

    Returns (versions, the other arguments, an error line or None). Every version is checked
    against the lock files before anything runs, and an empty list is an error, never a run
    that measures nothing.
    """
    rest: list[str] = []
    versions, given = list(default), None
    it = iter(args)
    for arg in it:
        if arg == "--versions":
            given = next(it, "")
        elif arg.startswith("--versions="):
            given = arg.split("=", 1)[1]
        else:
            rest.append(arg)
    if given is not None:
        versions = (list(every) if given.strip() == "all"
                    else [v.strip() for v in given.split(",") if v.strip()])
        if not versions:
            return [], rest, (f"--versions {given!r} names no SDK version: the bench would "
                              f"measure nothing; name one or more, e.g. --versions "
                              f"{','.join(default)}, or --versions all")
    for version in versions:
        error = unlocked_version_error(version, lock_dir)
        if error is not None:
            return versions, rest, error
    return versions, rest, None
