"""The LangGraph lanes on real servers: every lane builds, puts, reads back and reopens its own
store; PostgreSQL trials are isolated; a missing driver, class or server is not measured with
the reason; the KIND and API claims are verified on the object, and a false one is an error."""

from __future__ import annotations

import dataclasses
import importlib.util
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pytest

from arib.checks.langgraph._saver import call, config, listing, make_checkpoint, saver_of, store_of
from arib.checks.registry import get_check
from arib.execute import RunOptions, run_check
from arib.ground.model import Verdict
from arib.ground.services import ServiceManager
from arib.lanes import prepare_lanes
from arib.targets.base import BuildContext, Handle, NotApplicable, TargetSpec
from arib.targets.langgraph import lanes as lg
from arib.targets.langgraph import services as lgs
from tests.langgraph.conftest import HAVE_POSTGRES

HAVE_REDIS = ServiceManager(environ={}).availability("redis") is None


def _lane(lane: TargetSpec) -> Any:
    return pytest.param(lane, id=lane.name, marks=pytest.mark.skipif(
        lane.service == "postgres" and not HAVE_POSTGRES,
        reason="PostgreSQL server binaries not installed"))


async def _write(obj: Any, lane: TargetSpec, seed: int) -> str:
    """Put one checkpoint (or store item) through the half the lane serves; what was put."""
    if lg.KIND[lane.name] == "checkpointer":
        cp, versions = make_checkpoint(obj, seed, 0, {"a": "žluť"}, history=False)
        await call(obj, "put", config("t"), cp, {"step": 0}, versions)
        return str(cp["id"])
    value = {"v": seed}
    if lg.API[lane.name] == "sync":
        await anyio.to_thread.run_sync(lambda: obj.put(("ns",), "k", value))
    else:
        await obj.aput(("ns",), "k", value)
    return repr(value)


async def _read(obj: Any, lane: TargetSpec) -> str | None:
    """What the store holds for ``_write``'s thread or key, through the lane's half."""
    if lg.KIND[lane.name] == "checkpointer":
        got = await call(obj, "get_tuple", config("t"))
        return None if got is None else str(got.checkpoint["id"])
    if lg.API[lane.name] == "sync":
        item = await anyio.to_thread.run_sync(lambda: obj.get(("ns",), "k"))
    else:
        item = await obj.aget(("ns",), "k")
    return None if item is None else repr(item.value)


async def _build(lane: TargetSpec, root: Path, services: Mapping[str, str]) -> Handle:
    root.mkdir(exist_ok=True)
    return await lane.build(BuildContext(root, "s", dict(services)))


@pytest.mark.parametrize("lane", [_lane(lane) for lane in lg.LANES])
def test_every_lane_builds_puts_reads_back_and_reopens_its_store(
        lane: TargetSpec, tmp_path: Path, services: Mapping[str, str]) -> None:
    async def main() -> tuple[str | None, str, str | None, str | None]:
        handle = await _build(lane, tmp_path / "trial", services)
        try:
            claim = await lg.verify_api(lane, handle.session)
            put = await _write(handle.session, lane, 7)
            if handle.private_store:
                with pytest.raises(NotApplicable):
                    await handle.reopen()
                return claim, put, await _read(handle.session, lane), put
            other = await handle.reopen()
            try:
                assert other.session is not handle.session
                return claim, put, await _read(handle.session, lane), await _read(
                    other.session, lane)
            finally:
                await other.dispose()
        finally:
            await handle.dispose()

    claim, put, got, reopened = anyio.run(main)
    assert claim is None
    assert got == put
    assert reopened == put


@pytest.mark.skipif(not HAVE_POSTGRES, reason="PostgreSQL server binaries not installed")
@pytest.mark.parametrize("lane", [lg.POSTGRES, lg.ASYNC_POSTGRES_POOL, lg.STORE_ASYNC_POSTGRES],
                         ids=lambda lane: lane.name)
def test_postgres_trials_are_isolated_each_in_its_schema(
        lane: TargetSpec, tmp_path: Path, services: Mapping[str, str]) -> None:
    import psycopg

    async def main() -> tuple[str | None, str | None]:
        first = await _build(lane, tmp_path / "a", services)
        second = await _build(lane, tmp_path / "b", services)
        try:
            put = await _write(first.session, lane, 1)
            assert await _read(first.session, lane) == put
            return await _read(second.session, lane), put
        finally:
            await first.dispose()
            await second.dispose()

    seen_by_other, _ = anyio.run(main)
    assert seen_by_other is None
    schemas = [lgs.trial_schema(BuildContext(tmp_path / name, "s")) for name in ("a", "b")]
    assert schemas[0] != schemas[1]
    dsn = lgs.conninfo(BuildContext(tmp_path, "s", dict(services)), lane.name)
    with psycopg.connect(dsn) as conn:
        tables = {schema: {row[0] for row in conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = %s",
            (schema,))} for schema in schemas}
    wanted = "store" if lg.KIND[lane.name] == "store" else "checkpoints"
    assert wanted in tables[schemas[0]] and wanted in tables[schemas[1]], tables


def test_a_missing_class_is_not_measured_naming_class_and_version() -> None:
    from importlib import metadata

    manager = ServiceManager(environ={})
    renamed = dataclasses.replace(lg.SHALLOW_POSTGRES, name="lg-gone", backend="GoneSaver")
    found = lgs.lane_availability(renamed, manager)
    version = metadata.version("langgraph-checkpoint-postgres")
    assert found is not None and found.name == "lg-gone"
    assert found.reason == (f"not measured, because GoneSaver is not in "
                            f"langgraph-checkpoint-postgres {version}")


def test_a_missing_driver_or_server_is_not_measured_with_the_reason() -> None:
    real = importlib.util.find_spec
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(importlib.util, "find_spec",
                      lambda name, *a: None if name == "psycopg_pool" else real(name, *a))
        pool = lgs.lane_availability(lg.ASYNC_POSTGRES_POOL, ServiceManager(environ={}))
    assert pool is not None and pool.name == "lg-async-postgres-pool"
    assert "'psycopg_pool' is not installed (pip install psycopg-pool)" in pool.reason
    no_server = ServiceManager(environ={}, sources=())
    missing = lgs.lane_availability(lg.ASYNC_POSTGRES, no_server)
    assert missing is not None and missing.name == "lg-async-postgres"
    assert "PostgreSQL server binaries (initdb, postgres) not found" in missing.reason
    assert lgs.lane_availability(lg.SQLITE_FILE, no_server) is None
    prepared = prepare_lanes([lg.ASYNC_POSTGRES, lg.SQLITE_FILE], no_server)
    assert [lane.name for lane in prepared.lanes] == ["lg-sqlite-file"]
    assert {m.name for m in prepared.not_measured} == {"lg-async-postgres", "lg-redis"}


@pytest.mark.skipif(not HAVE_REDIS, reason="redis-server not installed")
def test_the_harness_redis_lacks_the_modules_the_redis_saver_needs() -> None:
    """What NOT_MEASURED says of Redis, still true of the harness's own redis-server."""
    import redis

    with ServiceManager(environ={}) as manager:
        client = redis.Redis.from_url(manager.start("redis").url)
        try:
            modules = {m[b"name"].decode().lower() for m in client.execute_command("MODULE LIST")}
            with pytest.raises(redis.ResponseError, match="unknown command"):
                client.execute_command("JSON.SET", "arib-probe", "$", "{}")
        finally:
            client.close()
    assert not modules & {"rejson", "redisjson", "search", "ft"}
    assert "RedisJSON and RediSearch" in lgs.REDIS_NOT_MEASURED.reason


@pytest.mark.skipif(not HAVE_POSTGRES, reason="PostgreSQL server binaries not installed")
@pytest.mark.parametrize(("lane", "halves"), [
    (lg.ASYNC_POSTGRES, ("InvalidStateError", "ok")),
    (lg.POSTGRES, ("ok", "NotImplementedError")),
    (lg.ASYNC_SQLITE_FILE, ("InvalidStateError", "ok")),
    (lg.SQLITE_FILE, ("ok", "NotImplementedError")),
    (lg.STORE_ASYNC_SQLITE_FILE, ("InvalidStateError", "ok")),
    (lg.STORE_SQLITE_FILE, ("ok", "NotImplementedError")),
    (lg.MEMORY, ("ok", "ok")),
], ids=lambda v: v.name if isinstance(v, TargetSpec) else "-")
def test_an_async_class_refuses_sync_calls_from_the_loop_and_a_sync_one_async_calls(
        lane: TargetSpec, halves: tuple[str, str], tmp_path: Path,
        services: Mapping[str, str]) -> None:
    async def main() -> tuple[str, str]:
        handle = await _build(lane, tmp_path / "probe", services)
        try:
            return await lg._served(handle.session, lg.KIND[lane.name])
        finally:
            await handle.dispose()

    assert anyio.run(main) == halves


def _run(lane: TargetSpec, check_id: str = "ARIB-CKPT-001") -> Any:
    check = get_check(check_id)
    opts = RunOptions(params=check.resolve_params({"trials": 1, "steps": 2}))
    return run_check(check, lane, opts)


def test_a_false_api_claim_is_an_error_finding_naming_lane_claim_and_fix(
        monkeypatch: pytest.MonkeyPatch, private_tmp: Path) -> None:
    finding = _run(lg.SQLITE_FILE)
    assert finding.verdict is Verdict.HELD, (finding.modes, finding.samples, finding.reason)
    monkeypatch.setitem(lg.API, "lg-sqlite-file", "async")  # type: ignore[index]
    finding = _run(lg.SQLITE_FILE)
    assert finding.verdict is Verdict.ERROR
    assert finding.reason is not None
    assert "false claim by target 'lg-sqlite-file': API says 'async'" in finding.reason
    assert "aget_tuple() gave NotImplementedError (which is 'sync')" in finding.reason
    assert "fix KIND and API in targets/langgraph/lanes.py" in finding.reason


def test_a_false_kind_claim_is_an_error_finding(monkeypatch: pytest.MonkeyPatch,
                                                private_tmp: Path) -> None:
    monkeypatch.setitem(lg.KIND, "lg-store-memory", "checkpointer")  # type: ignore[index]
    finding = _run(lg.STORE_MEMORY)
    assert finding.verdict is Verdict.ERROR
    assert finding.reason is not None
    assert ("KIND says 'checkpointer' but the object is InMemoryStore, a store"
            in finding.reason)


def test_a_checkpointer_check_abstains_on_a_store_lane(private_tmp: Path) -> None:
    finding = _run(lg.STORE_SQLITE_FILE)
    assert finding.verdict is Verdict.NOT_APPLICABLE
    assert "SqliteStore, a store, not a checkpointer" in (finding.reason or "")


def test_saver_of_and_store_of_name_what_the_object_is(tmp_path: Path) -> None:
    async def main() -> None:
        saver = await _build(lg.MEMORY, tmp_path / "m", {})
        store = await _build(lg.STORE_MEMORY, tmp_path / "s", {})
        assert saver_of(saver) is saver.session and store_of(store) is store.session
        with pytest.raises(NotApplicable, match="InMemorySaver, a checkpointer, not a store"):
            store_of(saver)
        with pytest.raises(NotApplicable, match="InMemoryStore, a store, not a checkpointer"):
            saver_of(store)
        with pytest.raises(NotApplicable, match="a store, not a checkpointer"):
            await listing(store.session, config("t"))
        with pytest.raises(NotApplicable, match="a store: it keeps no checkpoints"):
            await lg.read_checkpoints(store.session)

    anyio.run(main)


def test_every_lane_says_its_kind_api_and_drivers() -> None:
    assert lg.LANES[0].reference and lg.CHECKPOINTER_LANES[0] is lg.REFERENCE
    assert set(lg.KIND) == set(lg.API) == {lane.name for lane in lg.LANES}
    assert {lg.KIND[lane.name] for lane in lg.STORE_LANES} == {"store"}
    assert all(lane.name in lg.LANE_DRIVERS for lane in lg.LANES if lane.service)
    # the survey's default lanes: every lane but the family's reference, which it puts first
    assert {lane.name for lane in lg.SURVEY_LANES} == {lane.name for lane in lg.LANES[1:]}


def test_a_backend_failing_every_call_is_no_evidence_against_its_api_claim() -> None:
    from langgraph.checkpoint.memory import InMemorySaver

    class Broken(InMemorySaver):
        def get_tuple(self, config: Any) -> Any:
            raise RuntimeError("broken")

        async def aget_tuple(self, config: Any) -> Any:
            raise RuntimeError("broken")

    class SyncOnly(InMemorySaver):
        async def aget_tuple(self, config: Any) -> Any:
            raise NotImplementedError

    assert anyio.run(lg.verify_api, lg.MEMORY, Broken()) is None
    found = anyio.run(lg.verify_api, lg.MEMORY, SyncOnly())
    assert found is not None
    assert "API says 'both'" in found and "aget_tuple() gave NotImplementedError" in found


def test_a_sync_half_that_blocks_the_loop_is_seen_as_not_served(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # AsyncPostgresStore 2.0.0's sync methods, called from the loop, wait forever on the loop
    # they block; the probe must end and see that the class does not serve its sync half.
    import time

    from langgraph.checkpoint.memory import InMemorySaver

    class BlocksTheLoop(InMemorySaver):
        def get_tuple(self, config: Any) -> Any:
            time.sleep(30)

        async def aget_tuple(self, config: Any) -> Any:  # InMemorySaver's calls get_tuple
            return None

    monkeypatch.setattr(lg, "SYNC_PROBE_S", 0.3)
    started = time.monotonic()
    found = anyio.run(lg._served, BlocksTheLoop(), "checkpointer")
    assert found == ("Overdue", "ok") and time.monotonic() - started < 10


@pytest.mark.skipif(not HAVE_POSTGRES, reason="PostgreSQL server binaries not installed")
@pytest.mark.parametrize("lane", [lg.ASYNC_POSTGRES_PIPELINE, lg.POSTGRES_PIPELINE],
                         ids=lambda lane: lane.name)
def test_a_pipelined_saver_keeps_its_pipeline_when_its_handle_is_dropped(
        lane: TargetSpec, tmp_path: Path, services: Mapping[str, str]) -> None:
    import gc

    async def main() -> list[str | None]:
        handle = await _build(lane, tmp_path / "trial", services)
        try:
            put = await _write(handle.session, lane, 3)
            reader = (await handle.reopen()).session  # its Handle is dropped here
            gc.collect()  # the pipeline's generator, if nothing else holds it, is finalized
            # ... on the loop, in the middle of one of these reads
            try:
                return [put, *[await _read(reader, lane) for _ in range(4)]]
            finally:  # nothing disposes a dropped handle: its open connection would make
                # later tests' CREATE INDEX CONCURRENTLY (setup) wait for it forever
                closed = reader.conn.close()
                if closed is not None:
                    await closed
        finally:
            await handle.dispose()

    put, *reads = anyio.run(main)
    assert reads == [put] * 4


@pytest.mark.parametrize("lane", [_lane(lane) for lane in (
    lg.MEMORY, lg.ASYNC_SQLITE_FILE, lg.SHALLOW_POSTGRES, lg.ASYNC_SHALLOW_POSTGRES)])
def test_latest_only_is_claimed_exactly_by_the_savers_that_keep_one_checkpoint(
        lane: TargetSpec, tmp_path: Path, services: Mapping[str, str]) -> None:
    async def main() -> tuple[str | None, int]:
        handle = await _build(lane, tmp_path / "trial", services)
        try:
            saver, previous = handle.session, None
            for step in range(2):
                cp, versions = make_checkpoint(saver, 3, step, {"a": step}, previous,
                                               history=False)
                parent = None if previous is None else previous["id"]
                await call(saver, "put", config("t", "", parent), cp, {"step": step}, versions)
                previous = cp
            return lg.latest_only(saver), len(await listing(saver, config("t")))
        finally:
            await handle.dispose()

    claim, kept = anyio.run(main)
    assert kept == (1 if claim else 2), (lane.name, claim, kept)


@pytest.mark.skipif(not HAVE_POSTGRES, reason="PostgreSQL server binaries not installed")
def test_the_close_check_runs_on_a_postgres_saver_and_abstains_on_a_shallow_one(
        private_tmp: Path, services: Mapping[str, str]) -> None:
    check = get_check("ARIB-LGCLOSE-001")
    opts = RunOptions(params=check.resolve_params({"trials": 2, "writers": 2, "steps": 2}),
                      services=dict(services))
    held = run_check(check, lg.ASYNC_POSTGRES, opts)
    assert held.verdict is Verdict.HELD, held.reason
    assert held.trials == 2 and held.violating_trials == 0
    shallow = run_check(check, lg.SHALLOW_POSTGRES, opts)
    assert shallow.verdict is Verdict.NOT_APPLICABLE
    assert "keeps only the latest checkpoint" in (shallow.reason or "")


def test_the_table_of_lanes_imports_no_backend_and_names_the_memory_class_as_imported():
    # A run imports only its own lane's backend (arib.warm): the table reads the in-memory
    # saver's class from the installed source, and names the class importing it shows.
    from tests.test_sources import loaded_after

    loaded = loaded_after("import arib.targets.langgraph.lanes\n")
    assert not [m for m in loaded if m.split(".")[0] in ("langgraph", "langchain_core")]
    import langgraph.checkpoint.memory as memory

    lane = next(t for t in lg.LANES if t.name == "lg-memory")
    shown = "InMemorySaver" if hasattr(memory, "InMemorySaver") else "MemorySaver"
    assert lane.backend == shown and getattr(memory, shown).__name__ == shown
