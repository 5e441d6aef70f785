"""The store fault workflows (ARIB-RELEASE-001, ARIB-TABLES-001): classes, abstentions, lanes."""

from __future__ import annotations

import asyncio
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import anyio
import pytest

from arib.checks.openai_agents.parity.fault_workflows import FAULT_WORKFLOWS
from arib.checks.openai_agents.parity.store_faults import (
    after_cancelled_close,
    first_call_class,
    read_class,
    refusal_class,
)
from arib.checks.openai_agents.parity.workflows import run_workflow
from arib.checks.parity.faultkit import Abstain, StoreAccess
from arib.ground.model import Loop
from arib.parity.gate import GateOptions, check
from arib.targets.base import BuildContext
from arib.targets.openai_agents.reference import REFERENCE
from arib.targets.openai_agents.sdk import SQLITE_FILE

RELEASE = ("fault_cancelled_first_call", "fault_failed_open", "fault_cancelled_close")
TABLES = ("fault_misconfigured_tables",)
HISTORY = [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]


def workflows(*names: str) -> tuple[Any, ...]:
    return tuple(w for w in FAULT_WORKFLOWS if w.name in names)


def gate(tmp_path: Path, lanes: str, names: tuple[str, ...]) -> dict[str, Any]:
    opts = GateOptions(
        lanes=lanes,
        loops=(Loop.ASYNCIO,),
        cases=0,
        workflows=workflows(*names),
        results_dir=tmp_path / "results",
    )
    report, folder = check(opts)
    shutil.rmtree(folder)
    return report


def test_the_store_fault_workflows_are_registered_once_each() -> None:
    names = [w.name for w in FAULT_WORKFLOWS]
    assert all(names.count(n) == 1 for n in (*RELEASE, *TABLES))
    from arib.checks.openai_agents.parity.fault_workflows import fault_workflow_table

    table = dict(fault_workflow_table())
    assert {table[n] for n in RELEASE} == {"ARIB-RELEASE-001"}
    assert {table[n] for n in TABLES} == {"ARIB-TABLES-001"}


def test_a_read_is_the_whole_history_or_what_it_was_instead() -> None:
    assert read_class(list(HISTORY), "returned", HISTORY) == "whole_history"
    assert read_class(HISTORY[:1], "returned", HISTORY) == "other_items"
    assert read_class(HISTORY[::-1], "returned", HISTORY) == "other_items"
    assert read_class(None, "raised:RuntimeError", HISTORY) == "raised:RuntimeError"
    assert read_class(None, "hung", HISTORY) == "hung"


def test_a_read_after_a_cancelled_close_is_one_class_served_or_refused() -> None:
    # The reference serves it (its close() was cancelled before it began), AsyncSQLiteSession
    # refuses it (it marks itself closed first): both keep the invariant, so one class.
    assert after_cancelled_close(list(HISTORY), "returned", HISTORY) == "served_or_refused"
    assert after_cancelled_close(None, "raised:RuntimeError", HISTORY) == "served_or_refused"
    assert after_cancelled_close([], "returned", HISTORY) == "other_items"
    assert after_cancelled_close(None, "hung", HISTORY) == "hung"


def test_a_failed_first_call_is_the_stores_own_error_or_a_wrong_one() -> None:
    assert first_call_class(sqlite3.OperationalError("unable to open")) == "store_error_or_served"
    assert first_call_class(FileNotFoundError("no folder")) == "store_error_or_served"
    assert first_call_class(None) == "store_error_or_served"
    assert first_call_class(TypeError("NoneType")) == "wrong_error:TypeError"
    assert first_call_class(AttributeError("_conn")) == "wrong_error:AttributeError"
    assert first_call_class(TimeoutError()) == "hung"


def test_a_refusal_is_any_valueerror_and_nothing_else() -> None:
    assert refusal_class(ValueError("other pair")) == "refused:ValueError"
    assert refusal_class(UnicodeError("a ValueError too")) == "refused:ValueError"
    assert refusal_class(None) == "served"
    assert refusal_class(sqlite3.OperationalError("no such table")) == "raised:Exception"
    assert refusal_class(asyncio.CancelledError()) == "cancelled"


def test_store_access_names_a_missing_folder_and_abstains_on_options_not_taken(
    tmp_path: Path,
) -> None:
    async def main() -> None:
        handle = await SQLITE_FILE.build(BuildContext(tmp_path, "s"))
        store = StoreAccess(SQLITE_FILE, handle, tmp_path, "s")
        try:
            missing = store.missing_context()
            assert missing.root.parent == tmp_path and not missing.root.exists()
            assert store.missing_context().root != missing.root
            with pytest.raises(Abstain, match="takes no constructor option 'create_tables'"):
                await store.open_configured(tmp_path, create_tables=False)
        finally:
            await store.dispose()
            await handle.dispose()

    anyio.run(main)


def _records(tmp_path: Path, name: str) -> dict[str, Any]:
    """The records of workflow ``name`` on the reference lane, by label."""

    tmp_path.mkdir(exist_ok=True)

    async def main() -> dict[str, Any]:
        handle = await REFERENCE.build(BuildContext(tmp_path, "s"))
        store = StoreAccess(REFERENCE, handle, tmp_path, "s")
        try:
            (workflow,) = workflows(name)
            result = await run_workflow(workflow, handle.session, lane="reference", store=store)
        finally:
            await store.dispose()
            await handle.dispose()
        assert result.ok, result.error
        return {r.label.split("/", 1)[1]: r.items for r in result.reads or ()}

    return anyio.run(main)


@pytest.mark.slow
def test_the_reference_records_the_classes_the_release_invariant_states(tmp_path: Path) -> None:
    first = _records(tmp_path / "first", "fault_cancelled_first_call")
    assert first["outcome_classes"] == ["cancelled|whole_history|close_returned|released"]
    opened = _records(tmp_path / "open", "fault_failed_open")
    assert opened["failed_open"] == [
        {
            "first_call": "store_error_or_served",
            "after_mkdir": "add_returned|whole_history",
            "close": "close_returned|released",
        }
    ]
    closed = _records(tmp_path / "close", "fault_cancelled_close")
    assert closed["outcome_classes"] == ["cancelled|read_served_or_refused|close_returned|released"]


@pytest.mark.slow
def test_the_reference_records_every_misconfiguration_refused_and_the_store_unchanged(
    tmp_path: Path,
) -> None:
    records = _records(tmp_path, "fault_misconfigured_tables")
    rows = records["misconfigured"]
    assert len(rows) == 4
    assert {(r["outcome"], r["store"]) for r in rows} == {("refused:ValueError", "unchanged")}
    assert records["own_pair"] == ["served"]
    assert records["new_store"] == [
        {"without_creation": "refused:ValueError", "with_creation": "returned",
         "then_without": "served"}
    ]


@pytest.mark.slow
def test_the_file_lanes_agree_with_the_reference_on_the_release_faults(tmp_path: Path) -> None:
    report = gate(tmp_path, "sqlite-file,async-sqlite-file,advanced-sqlite-file", RELEASE)
    assert report["ok"], report["fail_reasons"]
    assert report["workflow_mismatches"] == []
    abstained = report["abstained_workflows"]
    assert "async-sqlite-file@asyncio" not in abstained  # its close() is async: all compared
    for lane in ("sqlite-file@asyncio", "advanced-sqlite-file@asyncio"):
        (entry,) = abstained[lane]
        assert entry["workflow"] == "fault_cancelled_close"
        assert "is synchronous" in entry["reason"]


@pytest.mark.slow
def test_lanes_whose_store_is_no_file_of_the_process_abstain_from_the_release_faults(
    tmp_path: Path,
) -> None:
    report = gate(tmp_path, "sqlite-memory", RELEASE)
    assert report["ok"], report["fail_reasons"]
    listed = report["abstained_workflows"]["sqlite-memory@asyncio"]
    reasons = {a["workflow"]: a["reason"] for a in listed}
    assert set(reasons) == set(RELEASE)
    assert "store is not a file of this process" in reasons["fault_failed_open"]
    assert "store is not a file of this process" in reasons["fault_cancelled_first_call"]


@pytest.mark.slow
def test_only_lanes_with_table_options_are_compared_on_the_tables_fault(tmp_path: Path) -> None:
    report = gate(tmp_path, "advanced-sqlite-file,sqlite-file", TABLES)
    assert report["ok"], report["fail_reasons"]
    abstained = report["abstained_workflows"]
    assert "advanced-sqlite-file@asyncio" not in abstained
    (entry,) = abstained["sqlite-file@asyncio"]
    assert "takes no constructor option 'create_tables'" in entry["reason"]
