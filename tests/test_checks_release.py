"""ARIB-RELEASE-001: sessions give their store's files back after cancelled first calls, a
failed open and a cancelled close(), on the reference and the local file lanes; each of its
hand-written mutants is violated in the mode it breaks; lanes whose store is not a file of
this process abstain with the reason."""

from __future__ import annotations

from pathlib import Path

import pytest

from arib.checks.openai_agents.release_001 import is_store_error, open_files
from arib.ground.model import Verdict
from arib.targets.registry import get_target
from tests.checkrun import assert_holds_with_its_trials, assert_mutant_violates, run_small

SMALL = {"trials": 1, "points": 3}


def test_holds_on_the_reference() -> None:
    assert_holds_with_its_trials("ARIB-RELEASE-001", SMALL)


@pytest.mark.parametrize(("mutant", "mode"), [
    ("reference_close_swallows_cancel", "cancel_swallowed"),
    ("reference_close_keeps_connection", "files_kept"),
    ("reference_cancelled_read_leaks", "files_kept"),
    ("reference_cancelled_read_poisons", "unusable_after_cancel"),
    ("reference_open_error_masked", "wrong_error"),
])
def test_reference_mutants_are_violated(mutant: str, mode: str) -> None:
    assert_mutant_violates("ARIB-RELEASE-001", SMALL, mutant, mode)


@pytest.mark.parametrize("lane", ["sqlite-file", "async-sqlite-file", "advanced-sqlite-file",
                                  "encrypted-sqlite"])
def test_holds_on_local_file_lanes(lane: str) -> None:
    finding = run_small("ARIB-RELEASE-001", SMALL, lane=get_target(lane))
    assert finding.verdict is Verdict.HELD, finding.samples


def test_an_async_close_that_abandons_its_connection_keeps_files() -> None:
    finding = run_small("ARIB-RELEASE-001", SMALL, "async_sqlite_cancelled_close_abandons",
                        get_target("async-sqlite-file"))
    assert finding.verdict is Verdict.VIOLATED
    assert "files_kept" in finding.modes


def test_an_in_memory_store_abstains_with_the_reason() -> None:
    finding = run_small("ARIB-RELEASE-001", SMALL, lane=get_target("sqlite-memory"))
    assert finding.verdict is Verdict.NOT_APPLICABLE
    assert "holds no file under its store folder" in (finding.reason or "")


def test_open_files_sees_a_file_held_open_and_not_after_close(tmp_path: Path) -> None:
    (tmp_path / "inside").mkdir()
    held = (tmp_path / "inside" / "f.db").open("w")
    other = (tmp_path / "outside.db").open("w")
    try:
        assert open_files(tmp_path / "inside") == ["f.db"]
    finally:
        held.close()
        other.close()
    assert open_files(tmp_path / "inside") == []


def test_store_errors_are_the_drivers_not_the_sessions_code() -> None:
    import sqlite3

    assert is_store_error(sqlite3.OperationalError("unable to open database file"))
    assert is_store_error(FileNotFoundError("missing"))
    assert not is_store_error(TypeError("exceptions must derive from BaseException"))
    assert not is_store_error(RuntimeError("session could not start"))
