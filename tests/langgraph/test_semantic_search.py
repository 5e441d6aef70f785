"""Semantic search on the SQLite store lanes (issue 35): the lanes' connections come from a
driver that loads sqlite-vec (``arib.targets.langgraph.stores.SQLITE_DRIVER``),
ARIB-LGSTORE-006 holds there, and ARIB-LGSTORE-010 finds the two defects of
langgraph-checkpoint-sqlite 3.1.2's index (the config's ``fields`` ignored; pages past twice
the limit lost)."""

from __future__ import annotations

import sqlite3

import anyio
import pytest

from arib.ground.model import Verdict
from arib.targets.base import BuildContext, NotApplicable
from arib.targets.langgraph import stores
from arib.targets.langgraph.lanes import STORE_ASYNC_SQLITE_FILE, STORE_SQLITE_FILE
from tests.checkrun import run_small

needs_index = pytest.mark.skipif(stores.NO_INDEX is not None,
                                 reason=f"no SQLite driver here loads extensions: "
                                        f"{stores.NO_INDEX}")


def test_the_driver_loads_extensions_and_the_lanes_say_which() -> None:
    if stores.NO_INDEX is None:
        assert hasattr(stores.SQLITE_DRIVER.Connection, "enable_load_extension")
    else:
        assert stores.SQLITE_DRIVER is sqlite3 and "loadable extensions" in stores.NO_INDEX
    for lane in (STORE_SQLITE_FILE, STORE_ASYNC_SQLITE_FILE):
        assert stores.DRIVER_NOTE in lane.description
        assert f"SQLite {stores.SQLITE_DRIVER.sqlite_version}" in lane.description
        assert "index" in lane.options


@needs_index
def test_the_async_store_gets_a_connection_of_the_driver(tmp_path) -> None:
    """aiosqlite given a connector: the connection it makes is the driver's (it loads
    extensions), and AsyncSqliteStore sets up its vector tables on it."""

    async def main() -> None:
        index = {"dims": 2, "embed": lambda t: [[1.0, 0.0]] * len(t), "fields": ["text"]}
        handle = await stores.build_async_sqlite_store(
            BuildContext(root=tmp_path, session_id="s", options={"index": index}))
        try:
            conn = handle.session.conn
            assert isinstance(conn._conn, stores.SQLITE_DRIVER.Connection)
            await handle.session.aput(("a",), "k", {"text": "x"})
            found = await handle.session.asearch(("a",), query="x")
            assert [item.key for item in found] == ["k"] and found[0].score == pytest.approx(1)
        finally:
            await handle.dispose()

    anyio.run(main)


def test_an_index_where_no_driver_loads_extensions_is_not_measured(monkeypatch,
                                                                   tmp_path) -> None:
    monkeypatch.setattr(stores, "NO_INDEX", "no driver here loads extensions")
    with pytest.raises(NotApplicable, match="not measured here, because no driver here"):
        anyio.run(stores.build_sqlite_store, BuildContext(root=tmp_path, session_id="s",
                                                          options={"index": {"dims": 2}}))


@needs_index
@pytest.mark.parametrize("lane", [STORE_SQLITE_FILE, STORE_ASYNC_SQLITE_FILE])
def test_the_sqlite_stores_keep_the_common_contract_and_break_fields_and_pages(lane) -> None:
    held = run_small("ARIB-LGSTORE-006", {"trials": 1}, lane=lane)
    assert held.verdict is Verdict.HELD, held.samples
    found = run_small("ARIB-LGSTORE-010", {"trials": 1}, lane=lane)
    assert found.verdict is Verdict.VIOLATED, found.samples
    sample = found.samples[0]
    assert "a put without index= under fields=['text'] embeds more than the text" in sample
    assert "without ['multi', 'r3']" in sample
    assert found.replay and "--trial-seed" in found.replay and found.ops
