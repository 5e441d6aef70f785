"""The LangGraph lane probe (checks/langgraph/_probe.py) on the pinned release: every lane takes
every call; a lane whose builder or calls the release refuses is not measured, naming the call,
while the other lanes go on; a release that fails in its own code is still measured; and the
calls the probe makes adapt to the release (get_next_version's channel) and never hang."""

from __future__ import annotations

import dataclasses
import sqlite3
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio
import pytest

from arib.checks.langgraph import _saver
from arib.checks.langgraph._saver import ValueChannel, channel_argument
from arib.ground.services import ServiceManager
from arib.lanes import prepare_lanes
from arib.probe import ProbeStatus, probe_lanes
from arib.targets.base import BuildContext, Handle, TargetSpec
from arib.targets.langgraph import lanes as lg
from tests.langgraph.conftest import HAVE_POSTGRES


def test_every_lane_takes_every_call_of_the_probe(services: Mapping[str, str]) -> None:
    lanes = [lane for lane in lg.LANES if lane.service is None or HAVE_POSTGRES]
    found = probe_lanes(lanes, services)
    assert {name: r.status for name, r in found.items()} == {
        lane.name: ProbeStatus.OK for lane in lanes}, [r.to_json() for r in found.values()
                                                      if r.status is not ProbeStatus.OK]


async def _refusing_build(ctx: BuildContext) -> Handle:
    from langgraph.checkpoint.sqlite import SqliteSaver

    conn = sqlite3.connect(ctx.root / "x.db", check_same_thread=False)
    return Handle(SqliteSaver(conn, no_such_option=True), _nothing, _nothing)  # type: ignore


async def _nothing(*_: Any) -> Any:
    return None


async def _raising_build(ctx: BuildContext) -> Handle:
    """A saver whose setup() fails in its own code, as AsyncSqliteSaver of -sqlite 2.0.11 did
    on aiosqlite 0.22 (its connection has no is_alive())."""
    from langgraph.checkpoint.sqlite import SqliteSaver

    class Saver(SqliteSaver):
        def setup(self) -> None:
            self.conn.is_alive()  # type: ignore[attr-defined]

    conn = sqlite3.connect(ctx.root / "x.db", check_same_thread=False)
    return Handle(Saver(conn), _nothing, _nothing)


def test_a_refused_call_is_not_measured_naming_it_and_the_other_lanes_go_on() -> None:
    refusing = dataclasses.replace(lg.SQLITE_FILE, name="lg-refusing", build=_refusing_build)
    raising = dataclasses.replace(lg.SQLITE_FILE, name="lg-raising", build=_raising_build)
    with ServiceManager(environ={}) as manager:
        prepared = prepare_lanes([refusing, lg.MEMORY, raising, lg.SQLITE_FILE], manager)
    assert [lane.name for lane in prepared.lanes] == ["lg-memory", "lg-raising",
                                                       "lg-sqlite-file"]
    (missing,) = [m for m in prepared.not_measured if m.name == "lg-refusing"]
    assert missing.reason.startswith("not measured, because its probe failed on langgraph ")
    assert "at build: TypeError:" in missing.reason and "no_such_option" in missing.reason
    assert "harness defect" not in missing.reason  # the refused call is this test's
    found = probe_lanes([refusing, raising], {})
    assert found["lg-refusing"].status is ProbeStatus.FAILED  # the builder: not measured
    assert found["lg-raising"].status is ProbeStatus.RAISED
    assert found["lg-raising"].step == "setup" and found["lg-raising"].rejected_call is None


def test_the_harness_s_own_refused_call_is_named_as_its_defect(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # get_next_version(current, None), as the harness called it before it read the release's
    # signature, on a saver whose release reads the channel (-sqlite 1.0.0 did)
    from langgraph.checkpoint.sqlite import SqliteSaver

    class OldSaver(SqliteSaver):
        def get_next_version(self, current: str | None, channel: Any) -> str:
            return str(channel.checkpoint())

    async def build(ctx: BuildContext) -> Handle:
        return Handle(OldSaver(sqlite3.connect(ctx.root / "x.db", check_same_thread=False)),
                      _nothing, _nothing)

    monkeypatch.setattr(_saver, "channel_argument", lambda saver, value: None)
    monkeypatch.setattr("arib.probe.release_files", lambda _: frozenset({__file__}))
    lane = dataclasses.replace(lg.SQLITE_FILE, name="lg-old", build=build)
    result = probe_lanes([lane], {})["lg-old"]
    assert result.status is ProbeStatus.REFUSED, result.to_json()
    assert result.step == "get_next_version"
    assert result.rejected_call is not None
    assert result.rejected_call.startswith("checks/langgraph/_saver.py:")
    assert result.rejected_call.endswith(", into get_next_version()")
    assert "harness defect" in result.reason("langgraph x")


def test_get_next_version_s_channel_follows_the_release_s_signature() -> None:
    from langgraph.checkpoint.memory import InMemorySaver

    class Reading(InMemorySaver):
        def get_next_version(self, current: Any, channel: Any) -> Any:
            return f"1.{channel.checkpoint()}"

    assert channel_argument(InMemorySaver(), "v") is None  # declared `channel: None`
    given = channel_argument(Reading(), "v")
    assert isinstance(given, ValueChannel) and given.checkpoint() == "v"
    cp, versions = _saver.make_checkpoint(Reading(), 1, 0, {"a": "x"}, history=False)
    assert versions == {"a": "1.x"} and cp["channel_versions"] == versions


def test_a_call_that_never_returns_is_call_hung_not_a_harness_timeout(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_saver, "CALL_DEADLINE_S", 0.3)

    async def stuck_thread() -> None:
        await _saver._answered("Store.put()", True, lambda: time.sleep(2))

    async def stuck_task() -> None:
        await _saver._answered("Store.aput()", False, lambda: anyio.sleep(2))

    for stuck in (stuck_thread, stuck_task):
        started = time.perf_counter()
        with pytest.raises(_saver.CallHung, match=r"\(\) did not return within 0.3 s"):
            anyio.run(stuck)
        assert time.perf_counter() - started < 1.5


def test_the_reference_store_that_cannot_exist_is_not_measured_naming_what_it_lacks(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from arib.targets.langgraph import services as lgs

    (tmp_path / "arib_needs_missing.py").write_text(
        "from langgraph.store.base import NoSuchOp\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    lane = TargetSpec(name="lg-store-own", backend="OwnStore", module="arib_needs_missing",
                      claims=lg.NO_CLOSE, build=_refusing_build, description="ours")
    missing = lgs.absent_class(lane)
    assert missing is not None
    assert missing.reason.startswith("not measured, because our OwnStore (arib_needs_missing) "
                                     "implements an API that langgraph-checkpoint ")
    assert "lacks: cannot import name 'NoSuchOp' from 'langgraph.store.base'" in missing.reason
