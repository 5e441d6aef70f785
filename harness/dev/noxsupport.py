"""What the noxfile needs, in the standard library only (nox's own Python imports it).

Finding the interpreters where `.ci/run` finds them (pyenv's versions folder, `uv python
find`, PATH), making them visible to nox by name, and reading `--versions` against the lock
files, so that a missing interpreter or an unknown SDK version stops a session with the fix.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from arib.ground.invocations import (  # the runtime's messages name the same commands
    LOCK_DIR,
    component_versions,
    family_name,
    label_form_error,
    lock_command,
    unlocked_version_error,
    version_key,
    versions_noun,
)

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


def sdk_env_dir(root: Path, stem: str, python: str) -> Path:
    """Where nox builds the environment of one version (``stem``: ``<family>-<version>``) for
    ``python`` (``3.12``): ``.nox/sdk-envs/<stem>-py<python>`` under the checkout ``root``; its
    ``.lock-sha`` file holds ``env_stamp`` of what it was built from."""
    return root / ".nox" / "sdk-envs" / f"{stem}-py{python}"


def env_stamp(root: Path, lock: Path) -> str:
    """What an SDK environment is built from: the SHA-256 of its lock and of the project's
    own install recipe (pyproject.toml: its packages and entry points). A reused environment
    whose stamp differs is rebuilt (one kept the old import names after a rename)."""
    return hashlib.sha256(lock.read_bytes() + (root / "pyproject.toml").read_bytes()).hexdigest()


def split_family(args: Sequence[str]) -> tuple[str, list[str]]:
    """Take ``--family NAME`` out of a session's arguments: (the family, the rest); the
    default family when none is named."""
    family, rest = take_option(args, "--family")
    return family_name(family), rest


def take_option(args: Sequence[str], name: str) -> tuple[str | None, list[str]]:
    """Take ``NAME VALUE`` (or ``NAME=VALUE``) out of ``args``: (the last value given, or
    None; the other arguments). ``NAME`` last, with no value, gives ""."""
    value, rest = None, []
    it = iter(args)
    for arg in it:
        if arg == name:
            value = next(it, "")
        elif arg.startswith(f"{name}="):
            value = arg.split("=", 1)[1]
        else:
            rest.append(arg)
    return value, rest


def split_versions(args: Sequence[str], default: Sequence[str], every: Sequence[str],
                   lock_dir: Path = LOCK_DIR, family: str | None = None,
                   components: Sequence[tuple[str, str]] = ()
                   ) -> tuple[list[str], list[str], str | None]:
    """Take ``--versions a,b`` (or ``all``) out of the bench's arguments.

    Returns (versions, the other arguments, an error line or None). Every version is checked
    against ``family``'s lock files (and its labels' form) before anything runs, and an empty
    list is an error, never a run that measures nothing.
    """
    given, rest = take_option(args, "--versions")
    versions = list(default)
    if given is not None:
        versions = (list(every) if given.strip() == "all"
                    else [v.strip() for v in given.split(",") if v.strip()])
        if not versions:
            noun = versions_noun(family)
            return [], rest, (f"--versions {given!r} names no {noun} version: the bench "
                              f"would measure nothing; name one or more, e.g. --versions "
                              f"{','.join(default)}, or --versions all")
    for version in versions:
        error = unlocked_version_error(version, lock_dir, family, components)
        if error is not None:
            return versions, rest, error
    return versions, rest, None


# A line of a requirements.in kept only for some releases of a component, e.g.
#   langgraph-checkpoint-conformance==0.0.2  # only with cp>=2.0.0
_ONLY_WITH = re.compile(r"#\s*only with\s+(?P<label>\w+)\s*(?P<op>>=|<)\s*(?P<bound>[\d.]+)")


def fill_requirements(template: str, version: str, components: Sequence[tuple[str, str]] = (),
                      family: str | None = None) -> tuple[str, list[str]]:
    """The requirements of one version: ``{sdk}`` (or each component's ``{label}``) filled in,
    and each line whose ``# only with LABEL>=X`` (or ``<X``) does not hold left out.

    Returns the text and one comment line per line left out, saying why. ValueError names a
    label the condition uses that the version lacks, or a version not of the labels' form.
    """
    values = component_versions(version, components) if components else {"sdk": version}
    if values is None:
        raise ValueError(label_form_error(version, family_name(family), components))
    kept, omitted = [], []
    for line in template.splitlines():
        condition = _ONLY_WITH.search(line)
        if condition is not None:
            label, op, bound = condition.group("label", "op", "bound")
            if label not in values:
                raise ValueError(f"requirements line {line!r} is kept only with {label!r}, "
                                 f"which {version!r} does not name; the labels are "
                                 f"{', '.join(values)}: fix the line's `# only with`")
            newer = version_key(values[label]) >= version_key(bound)
            if newer != (op == ">="):
                requirement = line[:condition.start()].strip()
                omitted.append(f"# {requirement} left out: {label}{values[label]} is not "
                               f"{op}{bound} ({line[condition.start() + 1:].strip()})")
                continue
        for label, value in values.items():
            line = line.replace("{" + label + "}", value)
        kept.append(line)
    return "\n".join(kept) + "\n", omitted


_DEPENDS = re.compile(r"(?P<who>[A-Za-z0-9_.-]+)==(?P<version>[^\s,]+) depends on "
                      r"(?P<dep>[A-Za-z0-9_.-]+?)(?P<spec>[<>=!~][^\s]*?)(?=,? and |,? we |\s|$)")


def resolver_refusal(output: str, version: str, family: str,
                     components: Sequence[tuple[str, str]] = ()) -> str:
    """One message for a version the resolver refused: the conflict in its own words (from
    ``uv pip compile``'s output) and the fix."""
    start = output.find("Because")
    cause = output[start:].split("hint:")[0] if start >= 0 else ""
    cause = " ".join(cause.replace("╰─▶", " ").split())
    if not cause:
        cause = " ".join(output.split())[-400:] or "no output from the resolver"
    label_of = {dist: label for label, dist in components}
    fix = (f"adapt {family}'s requirements.in (a marker, or an `# only with` line) or pick "
           f"other releases")
    for match in _DEPENDS.finditer(cause):
        who, dep, spec = match.group("who"), match.group("dep"), match.group("spec")
        if dep in label_of:
            other = f"another {label_of[who]}" if who in label_of else f"another {who}"
            fix = (f"{who} {match.group('version')} needs {dep}{spec}: pick a "
                   f"{label_of[dep]} release in {spec!r}, or {other} release")
            break
    return (f"refused {family} version {version!r}: pip would refuse this mix, nothing is "
            f"locked or measured. The resolver: {cause} Fix: {fix}, then "
            f"`{lock_command('<label>', family)}`")


def compile_lock(session: Any, uv: str, target: Path, requirements: str,
               header: Sequence[str]) -> str | None:
    """Compile ``requirements`` into the lock file ``target`` (uv, universal, Python 3.10 up),
    ``header`` lines on top; the resolver's refusal, or None when the lock was written
    (atomically: a refused one leaves the old lock as it was). The `lock` and `ecosystem`
    sessions' one way to write a lock."""
    target.parent.mkdir(parents=True, exist_ok=True)
    source = target.parent / f".{target.stem}.in"
    compiled = target.parent / f".{target.name}.tmp"
    source.write_text(requirements)
    try:
        command = [uv, "pip", "compile", "--universal", "--python-version", "3.10",
                   "--no-header", "--no-annotate", "-q", str(source), "-o", str(compiled)]
        session.log(" ".join(command))
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            return (done.stderr + done.stdout).strip()
        compiled.write_text("".join(f"{line}\n" for line in header) + compiled.read_text())
        os.replace(compiled, target)
        return None
    finally:
        source.unlink(missing_ok=True)
        compiled.unlink(missing_ok=True)
