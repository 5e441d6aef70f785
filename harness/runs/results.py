"""Result files: atomic writes, the run document, and schema validation."""

from __future__ import annotations

import datetime as dt
import functools
import json
import secrets
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from arib.ground.errors import ResultsError
from arib.ground.family import active_family
from arib.ground.model import Admission, Finding
from arib.ground.provenance import environment, harness_commit, lock_hash

SCHEMA_VERSION = 1
SCHEMA_DIR = Path(__file__).parent.parent / "schemas"


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


def started_utc(text: str) -> dt.datetime:
    """A result file's ``started`` as an aware UTC time (older runs wrote no zone: UTC)."""
    moment = dt.datetime.fromisoformat(text)
    return moment if moment.tzinfo else moment.replace(tzinfo=dt.timezone.utc)


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
    try:
        validate(document)
    except ResultsError as exc:
        raise ResultsError(f"{str(path)!r}: {exc}") from None
    return document
