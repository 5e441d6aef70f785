"""The :memory: check lanes and the store rule of ``Handle.reopen``: a second instance reads the
same store or the lane abstains, never a new, empty store read as lost items."""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest

from arib.ground.model import Verdict
from arib.targets.base import BuildContext, Handle, NotApplicable, TargetSpec
from arib.targets.openai_agents.lanes import REAL_TARGETS
from arib.targets.openai_agents.sdk import (
    MEMORY_OWNER_FILE,
    SQLALCHEMY_SQLITE_MEMORY,
    SQLITE_MEMORY,
)
from arib.targets.registry import get_target
from tests.checkrun import run_small

LOCAL = ("reference", "sqlite-file", "async-sqlite-file", "advanced-sqlite-file",
         "sqlalchemy-sqlite-file", "sqlite-memory", "sqlalchemy-sqlite-memory",
         "encrypted-sqlite", "encrypted-sqlalchemy-sqlite")
ITEMS = [{"role": "user", "content": "written by the first instance"},
         {"role": "assistant", "content": "and its answer"}]


def test_memory_lanes_are_real_lanes_of_every_run() -> None:
    names = [t.name for t in REAL_TARGETS]
    assert "sqlite-memory" in names and "sqlalchemy-sqlite-memory" in names
    assert get_target("sqlite-memory") is SQLITE_MEMORY


async def _write_then_reopen(spec: TargetSpec, root: Path) -> tuple[Handle, list, str | None]:
    """Write ITEMS through one instance; what a reopened instance reads (or why none can)."""
    handle = await spec.build(BuildContext(root, "s-1"))
    handles = [handle]
    try:
        await handle.session.add_items(ITEMS)
        try:
            fresh = await handle.reopen()
        except NotApplicable as exc:
            return handle, [], str(exc)
        handles.append(fresh)
        return handle, list(await fresh.session.get_items()), None
    finally:
        for h in reversed(handles):
            await h.dispose()


@pytest.mark.parametrize("lane", LOCAL)
def test_reopen_reads_the_same_store_or_says_why_not(lane: str, tmp_path: Path) -> None:
    handle, seen, refused = anyio.run(_write_then_reopen, get_target(lane), tmp_path)
    if refused is None:
        assert seen == ITEMS  # never a new, empty store
        assert handle.private_store is None
    else:  # only a store private to one object may refuse, and it says so up front
        assert handle.private_store == refused
        assert "':memory:'" in refused


async def _peer_on_same_store(spec: TargetSpec, root: Path) -> tuple[list, list]:
    first = await spec.build(BuildContext(root, "s-1"))
    peer = await spec.build(BuildContext(root, "s-1-peer"))
    try:
        await first.session.add_items(ITEMS[:1])
        await peer.session.add_items(ITEMS[1:])
        return list(await first.session.get_items()), list(await peer.session.get_items())
    finally:
        await peer.dispose()
        await first.dispose()


def test_a_peer_session_id_shares_the_in_memory_engine(tmp_path: Path) -> None:
    mine, theirs = anyio.run(_peer_on_same_store, SQLALCHEMY_SQLITE_MEMORY, tmp_path)
    assert (mine, theirs) == (ITEMS[:1], ITEMS[1:])


async def _build_after(spec: TargetSpec, root: Path, dispose_first: bool) -> str:
    handle = await spec.build(BuildContext(root, "s-1"))
    await handle.session.add_items(ITEMS)
    if dispose_first:
        await handle.dispose()
    try:
        again = await spec.build(BuildContext(root, "s-1"))
    except NotApplicable as exc:
        return str(exc)
    finally:
        if not dispose_first:
            await handle.dispose()
    await again.dispose()
    return "built"


@pytest.mark.parametrize("spec", [SQLITE_MEMORY, SQLALCHEMY_SQLITE_MEMORY],
                         ids=lambda s: s.name)
def test_a_disposed_memory_store_is_not_rebuilt_empty(spec: TargetSpec, tmp_path: Path) -> None:
    assert anyio.run(_build_after, spec, tmp_path, True) != "built"


def test_a_second_sqlite_memory_instance_is_refused_with_the_reason(tmp_path: Path) -> None:
    reason = anyio.run(_build_after, SQLITE_MEMORY, tmp_path, False)
    assert "':memory:'" in reason


@pytest.mark.parametrize("spec", [SQLITE_MEMORY, SQLALCHEMY_SQLITE_MEMORY],
                         ids=lambda s: s.name)
def test_another_process_cannot_open_the_memory_store(spec: TargetSpec, tmp_path: Path) -> None:
    (tmp_path / MEMORY_OWNER_FILE).write_text(str(os.getpid() + 1))  # owned by someone else
    with pytest.raises(NotApplicable, match=f"process {os.getpid() + 1}"):
        anyio.run(spec.build, BuildContext(tmp_path, "s-1"))


# A defective in-memory lane: reopen() opens a new engine, so a new, empty database. A check
# that reads through a fresh instance must then report the items as missing: that false
# violation is what the store rule (and the tests above) keep out of the real lanes.

async def _build_wrong_store(ctx: BuildContext) -> Handle:
    from agents.extensions.memory.sqlalchemy_session import SQLAlchemySession
    from sqlalchemy.ext.asyncio import create_async_engine
    from sqlalchemy.pool import StaticPool

    engine = create_async_engine("sqlite+aiosqlite://", poolclass=StaticPool)
    session = SQLAlchemySession(ctx.session_id, engine=engine, create_tables=True)

    async def reopen() -> Handle:
        return await _build_wrong_store(ctx)

    async def dispose() -> None:
        await engine.dispose()

    return Handle(session=session, reopen=reopen, dispose=dispose)


WRONG_STORE = TargetSpec(name="sqlalchemy-sqlite-memory-wrong-store",
                         backend="SQLAlchemySession", module=SQLALCHEMY_SQLITE_MEMORY.module,
                         claims=SQLALCHEMY_SQLITE_MEMORY.claims, build=_build_wrong_store,
                         description="reopen() opens a new, empty in-memory database")


def test_reading_a_new_empty_store_would_be_a_false_violation() -> None:
    params = {"trials": 1, "poppers": 2, "items": 4}
    assert run_small("ARIB-POP-001", params, lane=SQLALCHEMY_SQLITE_MEMORY).verdict \
        is Verdict.HELD
    wrong = run_small("ARIB-POP-001", params, lane=WRONG_STORE)
    assert wrong.verdict is Verdict.VIOLATED and "not_settled" in wrong.modes
    assert wrong.counts.lost > 0  # what the clean lane would be blamed for


@pytest.mark.slow
@pytest.mark.parametrize("lane", ["sqlite-memory", "sqlalchemy-sqlite-memory"])
def test_every_check_judges_or_abstains_on_a_memory_lane(lane: str) -> None:
    """No check errors on a memory lane, and none is violated on the clean SDK except where
    the SDK's own behaviour is the evidence: the idempotency rule no SDK backend keeps
    (ARIB-REPLAY-001), and on the one StaticPool connection that every SQLAlchemySession
    instance of an in-memory store shares, interleaved transactions (ORDER-001, CLEAR-001,
    CANCEL-001, in some trials) and a cancelled call after which the pool replaces that
    connection, and with it the whole store (NET-001, read as ``store_unreadable``). A read
    of the wrong store (a new, empty database) would show as lost items anywhere else."""
    from arib.checks.registry import load_checks

    shared = {"ARIB-ORDER-001", "ARIB-CLEAR-001", "ARIB-CANCEL-001", "ARIB-NET-001"}
    for check in load_checks():
        params = {p.name: p.default for p in check.params}
        params[check.trials_param] = 1
        finding = run_small(check.id, params, lane=get_target(lane), timeout_s=180)
        allowed = {Verdict.HELD, Verdict.NOT_APPLICABLE}
        if check.id == "ARIB-REPLAY-001" or (lane == "sqlalchemy-sqlite-memory"
                                             and check.id in shared):
            allowed.add(Verdict.VIOLATED)
        assert finding.verdict in allowed, (check.id, finding.verdict, finding.reason,
                                            finding.samples)
        if check.id == "ARIB-NET-001" and finding.verdict is Verdict.VIOLATED:
            assert set(finding.modes) == {"store_unreadable"}, finding.modes


@pytest.mark.parametrize("check_id", ["ARIB-COMPACT-001", "ARIB-COMPACT-002",
                                      "ARIB-COMPACT-003", "ARIB-COMPACT-004",
                                      "ARIB-COMPACT-005"])
def test_a_compaction_check_runs_on_the_private_memory_store_through_x_itself(check_id):
    # Compaction needs no second instance: on SQLiteSession(':memory:') the turn and its faults
    # run, and the reads (and COMPACT-003's racing writer) go through X itself, saying so.
    finding = run_small(check_id, {"trials": 2}, lane=SQLITE_MEMORY, timeout_s=180)
    assert finding.verdict is Verdict.HELD, (finding.samples, finding.reason)
    assert finding.trials == 2  # ran both trials: no abstention


@pytest.mark.parametrize("check_id", ["ARIB-DRAIN-001", "ARIB-FRESH-001"])
def test_a_check_that_needs_a_second_instance_abstains_on_the_private_memory_store(check_id):
    # Their fault opens another instance on the store: on SQLiteSession(':memory:') no other
    # instance can, and the builder says so. That is an abstention, never a violation.
    finding = run_small(check_id, {"trials": 1}, lane=SQLITE_MEMORY)
    assert finding.verdict is Verdict.NOT_APPLICABLE, (finding.samples, finding.reason)
    assert "memory" in (finding.reason or ""), finding.reason
