"""Result files: atomic writes, the run document, and schema validation."""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import functools
import hashlib
import json
import os
import platform
import secrets
import stat
import subprocess
import tempfile
from collections.abc import Iterator, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

from arib.ground.errors import ResultsError, UsageError
from arib.ground.family import active_family
from arib.ground.model import Admission, Finding
from arib.ground.package import checkout_root, version

SCHEMA_VERSION = 1
LOCK_NAME = ".arib.lock"
SCHEMA_DIR = Path(__file__).parent / "schemas"


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


def run_glob(version: str | None = None) -> str:
    """The file names of the active family's runs (of one version, or of every version),
    day-named (older) or time-and-id-named."""
    return f"*-{active_family().stem(version or '*')}.json"


def run_stem(started: dt.datetime, run_id: str, sdk: str, family: str | None = None) -> str:
    """The name of a run's files: its start time (UTC) and run id, never only the day, so a
    run never replaces another: ``2026-11-30T101502Z-3f9a1c2e-openai-agents-0.24.0``
    (``family``: the name of the run's family, default the active one)."""
    utc = started.astimezone(dt.timezone.utc)
    return f"{utc:%Y-%m-%dT%H%M%SZ}-{run_id}-{family or active_family().name}-{sdk}"


def new_run_id() -> str:
    """A short random id that tells apart two runs started in the same second."""
    return secrets.token_hex(4)


def harness_commit() -> str:
    """The git commit of the harness, with '-dirty' when the work tree has changes."""
    root = checkout_root()
    if root is None:  # an installed wheel: never the commit of the folder the user is in
        return f"installed {version()}"
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True,
                              text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                               cwd=root, capture_output=True, text=True).stdout.strip()
        return head + ("-dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def lock_hash(sdk: str) -> str:
    """SHA-256 of the lock file the environment was installed from, or 'unlocked'."""
    path = active_family().lock_file(sdk)
    if path is None or not path.exists():
        return "unlocked"
    return hashlib.sha256(path.read_bytes()).hexdigest()


def environment() -> dict[str, Any]:
    """Python, platform and every relevant package version of this process."""
    packages: dict[str, str | None] = {}
    family = active_family()
    for name in (family.distribution, *family.packages):
        try:
            packages[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            packages[name] = None
    return {
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpu_count": os.cpu_count(),
        "packages": packages,
    }


def run_document(
    *,
    sdk: str,
    parameters: dict[str, Any],
    findings: Sequence[Finding],
    admissions: Sequence[Admission],
    not_measured: Sequence[dict[str, str]],
    started: str,
    duration_s: float,
) -> dict[str, Any]:
    """The JSON document of one bench run."""
    return {
        "schema_version": SCHEMA_VERSION,
        "kind": "arib-bench-run",
        "sdk": {"name": active_family().name, "version": sdk},
        "harness_commit": harness_commit(),
        "lock_hash": lock_hash(sdk),
        "started": started,
        "duration_s": round(duration_s, 3),
        "environment": environment(),
        "parameters": parameters,
        "admission": [a.to_json() for a in admissions],
        "not_measured": list(not_measured),
        "findings": [f.to_json() for f in findings],
    }


def load_schema(name: str) -> dict[str, Any]:
    """The JSON schema ``name`` kept in the repo's schema folder."""
    return json.loads((SCHEMA_DIR / name).read_text())  # type: ignore[no-any-return]


@functools.cache
def _validator(schema: str) -> Any:
    """The validator of a schema kept in the repo, the schema itself checked once a process
    (``jsonschema.validate`` checked it again for every document: a third of the time of
    reading the 48 committed result files)."""
    import jsonschema

    contents = load_schema(schema)
    cls = jsonschema.validators.validator_for(contents)
    cls.check_schema(contents)
    return cls(contents)


def validate(document: dict[str, Any], schema: str = "bench-run.schema.json") -> None:
    """Validate a document against a schema kept in the repo; ResultsError on failure (the
    error ``jsonschema.validate`` would raise: the best match among all of them)."""
    import jsonschema

    error = jsonschema.exceptions.best_match(_validator(schema).iter_errors(document))
    if error is not None:
        where = "/".join(str(p) for p in error.absolute_path) or "<root>"
        raise ResultsError(
            f"result document fails {schema} at {where!r}: {error.message}; regenerate it "
            f"with `nox -s bench` rather than editing it"
        )


def read_results(path: Path) -> dict[str, Any]:
    """Load and validate a result file; ResultsError names a corrupt or foreign file."""
    try:
        document = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise ResultsError(f"cannot read result file {str(path)!r}: {exc}") from None
    if not isinstance(document, dict) or document.get("kind") != "arib-bench-run":
        raise ResultsError(
            f"{str(path)!r} is not a bench result (kind {document.get('kind')!r} "
            f"if a dict); pass a file written by `python -m arib bench`"
            if isinstance(document, dict)
            else f"{str(path)!r} is not a bench result; pass a file written by the bench"
        )
    validate(document)
    return document
