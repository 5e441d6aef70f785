"""Result files: atomic writes, the run document, and schema validation."""

from __future__ import annotations

import hashlib
import json
import os
import platform
import subprocess
import tempfile
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

from harness.errors import ResultsError
from harness.model import Admission, Finding

SCHEMA_VERSION = 1
SCHEMA_DIR = Path(__file__).parent / "schemas"
LOCK_DIR = Path(__file__).parent / "locks"
PACKAGES = ("openai-agents", "openai", "pydantic", "sqlalchemy", "aiosqlite", "anyio",
            "libcst", "jsonschema", "uvloop", "mutmut", "pytest", "redis", "asyncpg",
            "cryptography")


def atomic_write_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` so that a reader sees the old file or the new, never half."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def harness_commit() -> str:
    """The git commit of the harness, with '-dirty' when the work tree has changes."""
    root = Path(__file__).resolve().parent.parent
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True,
                              text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                               cwd=root, capture_output=True, text=True).stdout.strip()
        return head + ("-dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def lock_file(sdk: str) -> Path:
    """The lock (constraints) file for an SDK version."""
    return LOCK_DIR / f"openai-agents-{sdk}.txt"


def lock_hash(sdk: str) -> str:
    """SHA-256 of the lock file the environment was installed from, or 'unlocked'."""
    path = lock_file(sdk)
    if not path.exists():
        return "unlocked"
    return hashlib.sha256(path.read_bytes()).hexdigest()


def environment() -> dict[str, Any]:
    """Python, platform and every relevant package version of this process."""
    packages: dict[str, str | None] = {}
    for name in PACKAGES:
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
        "sdk": {"name": "openai-agents", "version": sdk},
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
    return json.loads((SCHEMA_DIR / name).read_text())  # type: ignore[no-any-return]


def validate(document: dict[str, Any], schema: str = "bench-run.schema.json") -> None:
    """Validate a document against a schema kept in the repo; ResultsError on failure."""
    import jsonschema

    try:
        jsonschema.validate(document, load_schema(schema))
    except jsonschema.ValidationError as exc:
        where = "/".join(str(p) for p in exc.absolute_path) or "<root>"
        raise ResultsError(
            f"result document fails {schema} at {where!r}: {exc.message}; regenerate it with "
            f"`nox -s bench` rather than editing it"
        ) from None


def read_results(path: Path) -> dict[str, Any]:
    """Load and validate a result file; ResultsError names a corrupt or foreign file."""
    try:
        document = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise ResultsError(f"cannot read result file {str(path)!r}: {exc}") from None
    if not isinstance(document, dict) or document.get("kind") != "arib-bench-run":
        raise ResultsError(
            f"{str(path)!r} is not a bench result (kind {document.get('kind')!r} "
            f"if a dict); pass a file written by `python -m harness bench`"
            if isinstance(document, dict)
            else f"{str(path)!r} is not a bench result; pass a file written by the bench"
        )
    validate(document)
    return document
