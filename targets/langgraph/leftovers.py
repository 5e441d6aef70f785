"""What a LangGraph lane's store still holds that names a thread, read besides the saver, with
the database's own means (ARIB-LGDEL-001: after ``delete_thread`` nothing of the thread is left,
not even rows no read of the saver shows, such as a channel's blob).

The store of a trial is a SQLite file of the trial's folder (our reference, the SQLite savers)
or the trial's schema on the harness's PostgreSQL (``services.trial_schema``). Every table of it
is scanned: a row names the thread when one of its values holds the thread id (text, or bytes
holding its UTF-8). A lane whose store lives in one instance's memory has nothing to read here.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from pathlib import Path

from arib.targets.base import BuildContext, NotApplicable, TargetSpec


def _sqlite_rows(path: Path, needle: str) -> dict[str, int]:
    found: dict[str, int] = {}
    raw = needle.encode()
    conn = sqlite3.connect(str(path), timeout=10)
    try:
        tables = [name for (name,) in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table'")]
        for table in tables:
            hits = sum(1 for row in conn.execute(f'SELECT * FROM "{table}"')
                       if any(needle in v if isinstance(v, str) else
                              isinstance(v, bytes) and raw in v for v in row))
            if hits:
                found[f"{path.name}:{table}"] = hits
    finally:
        conn.close()
    return found


def _postgres_rows(target: TargetSpec, build: BuildContext, needle: str) -> dict[str, int]:
    import psycopg

    from arib.targets.langgraph.services import conninfo, trial_schema

    schema = trial_schema(build)
    found: dict[str, int] = {}
    with psycopg.connect(conninfo(build, target.name), autocommit=True) as conn:
        tables = [row[0] for row in conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = %s",
            (schema,))]
        for table in tables:
            row = conn.execute(f'SELECT count(*) FROM "{schema}"."{table}" AS r '
                               f"WHERE strpos(r::text, %s) > 0", (needle,)).fetchone()
            if row and row[0]:
                found[table] = int(row[0])
    return found


def rows_naming(target: TargetSpec, build: BuildContext, needle: str) -> Mapping[str, int]:
    """Per table of ``build``'s store, how many rows hold ``needle`` (only tables with some);
    NotApplicable when the lane's store is neither a file of the trial's folder nor a schema
    on the harness's PostgreSQL."""
    if target.service == "postgres":
        return _postgres_rows(target, build, needle)
    files = sorted(build.root.glob("*.db"))
    if target.service is not None or not files:
        raise NotApplicable(f"lane {target.name!r} keeps its store neither in a SQLite file of "
                            f"the trial's folder nor on the harness's PostgreSQL")
    found: dict[str, int] = {}
    for path in files:
        found.update(_sqlite_rows(path, needle))
    return found
