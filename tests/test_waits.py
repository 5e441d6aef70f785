"""Each lane's own lock wait (TargetSpec.waits_s), read from the real backends, and the mutant
time limit that leaves room for it."""

from __future__ import annotations

import ast
import dataclasses
import sqlite3
from pathlib import Path

import anyio
import pytest

from arib.checks.registry import get_check
from arib.ground.sources import installed_source
from arib.judging import MIN_MUTANT_TIMEOUT_S, WAIT_MARGIN_S, mutant_timeout
from arib.targets.base import BuildContext
from arib.targets.openai_agents.reference import BUSY_DEADLINE_S, REFERENCE
from arib.targets.openai_agents.sdk import ASYNC_SQLITE_MODULE, SQLITE_BUSY_TIMEOUT_S, SQLITE_MODULE
from arib.targets.registry import get_target


def _connect_calls(module: str) -> list[ast.Call]:
    """Every ``sqlite3.connect(...)`` / ``aiosqlite.connect(...)`` call in a module's source."""
    tree = ast.parse(installed_source(module)[1])
    return [node for node in ast.walk(tree) if isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute) and node.func.attr == "connect"
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id in ("sqlite3", "aiosqlite")]


@pytest.mark.parametrize("module", [SQLITE_MODULE, ASYNC_SQLITE_MODULE])
def test_the_sdk_opens_sqlite_without_a_timeout_argument(module: str) -> None:
    calls = _connect_calls(module)
    assert calls, f"{module} no longer calls sqlite3/aiosqlite.connect: re-verify waits_s"
    for call in calls:
        assert "timeout" not in {k.arg for k in call.keywords}, ast.unparse(call)
        assert len(call.args) == 1, ast.unparse(call)  # timeout is connect()'s 2nd argument


def test_that_default_is_the_lanes_wait(tmp_path: Path) -> None:
    import aiosqlite

    with sqlite3.connect(tmp_path / "a.db") as conn:
        (ms,) = conn.execute("PRAGMA busy_timeout").fetchone()
    assert ms / 1000 == SQLITE_BUSY_TIMEOUT_S

    async def via_aiosqlite() -> int:
        async with aiosqlite.connect(str(tmp_path / "b.db")) as conn:
            async with conn.execute("PRAGMA busy_timeout") as cursor:
                row = await cursor.fetchone()
        assert row is not None
        return int(row[0])

    assert anyio.run(via_aiosqlite) / 1000 == SQLITE_BUSY_TIMEOUT_S


def test_the_sqlalchemy_lane_sets_the_same_wait(tmp_path: Path) -> None:
    lane = get_target("sqlalchemy-sqlite-file")

    async def busy_timeout() -> int:
        handle = await lane.build(BuildContext(tmp_path, "waits"))
        try:
            await handle.session.get_items()  # connects through the session's own engine
            async with handle.session.engine.connect() as conn:
                result = await conn.exec_driver_sql("PRAGMA busy_timeout")
                return int(result.scalar_one())
        finally:
            await handle.dispose()

    assert anyio.run(busy_timeout) / 1000 == lane.waits_s == SQLITE_BUSY_TIMEOUT_S


@pytest.mark.parametrize("name, waits", [
    ("sqlite-file", SQLITE_BUSY_TIMEOUT_S), ("async-sqlite-file", SQLITE_BUSY_TIMEOUT_S),
    ("advanced-sqlite-file", SQLITE_BUSY_TIMEOUT_S),
    ("sqlalchemy-sqlite-file", SQLITE_BUSY_TIMEOUT_S),
    ("encrypted-sqlite", SQLITE_BUSY_TIMEOUT_S),
    ("encrypted-sqlalchemy-sqlite", SQLITE_BUSY_TIMEOUT_S),
    ("redis-from-url", 0.0), ("redis-injected-client", 0.0), ("sqlalchemy-postgres", 0.0),
    ("reference", BUSY_DEADLINE_S),
])
def test_every_lane_names_its_wait(name: str, waits: float) -> None:
    lane = get_target(name)
    assert lane.waits_s == waits
    assert lane.to_json()["waits_s"] == waits


def test_a_mutant_limit_leaves_room_for_the_backends_own_wait() -> None:
    check = dataclasses.replace(get_check("ARIB-POP-001"), timeout_s=10.0)
    # No wait: 10 x the clean run, at least the minimum, at most the check's timeout.
    assert mutant_timeout(check, 0.05) == MIN_MUTANT_TIMEOUT_S
    assert mutant_timeout(check, 0.3) == pytest.approx(3.0)
    assert mutant_timeout(check, 5.0) == 10.0
    # SQLite's busy timeout: never less than two waits + the clean run + the margin, so the
    # "database is locked" of the next writer (and of the one after it) arrives inside the
    # limit, even above the cap.
    assert mutant_timeout(check, 0.3, 5.0) == pytest.approx(2 * 5.0 + 0.3 + WAIT_MARGIN_S)
    roomy = dataclasses.replace(check, timeout_s=30.0)
    assert mutant_timeout(roomy, 1.5, 5.0) == pytest.approx(15.0)  # 10 x clean is larger
    long = dataclasses.replace(check, timeout_s=4.0)
    assert mutant_timeout(long, 0.3, 5.0) == pytest.approx(12.3)
    assert mutant_timeout(check, 0.3, REFERENCE.waits_s) == pytest.approx(22.3)
