"""The third-party LangGraph lane lg-mysql of targets/ecosystem (arib_ecosystem.langgraph_mysql):
what it declares, that an absent package or server is not measured with the cause, and, where
langgraph-checkpoint-mysql is installed (its lock, harness/locks/ecosystem/lg-mysql.txt) and
Debian's mariadb-server is, that it builds on the throwaway MariaDB, its claims hold on the
object, the sync half is the one it serves, and a second build reads the same database."""

from __future__ import annotations

import asyncio
import dataclasses
import importlib
import importlib.util
from pathlib import Path
from typing import Any

import pytest

from arib.ground.services import NotMeasured, ServiceManager, mysql_query
from arib.targets.base import BuildContext, Claims, TargetSpec, verify_claims

ROOT = Path(__file__).resolve().parent.parent
HAVE_PACKAGE = importlib.util.find_spec("langgraph.checkpoint.mysql") is not None \
    if importlib.util.find_spec("langgraph") is not None else False


@pytest.fixture
def module(monkeypatch: pytest.MonkeyPatch) -> Any:
    """arib_ecosystem.langgraph_mysql, imported from the checkout (no install needed)."""
    monkeypatch.syspath_prepend(str(ROOT / "targets" / "ecosystem"))
    return importlib.import_module("arib_ecosystem.langgraph_mysql")


def test_the_lane_declares_its_package_server_and_traits(module: Any) -> None:
    (lane,) = module.LANES
    assert (lane.name, lane.backend, lane.module, lane.service) == (
        "lg-mysql", "PyMySQLSaver", "langgraph.checkpoint.mysql.pymysql", "mysql")
    assert lane.claims == Claims(has_close=False)
    fields = {field.name for field in dataclasses.fields(TargetSpec)}
    if "traits" in fields:  # a bench whose LangGraph family reads a plugin lane's traits
        assert lane.traits == {"kind": "checkpointer", "api": "sync"}
    if "distribution" in fields:
        assert lane.distribution == "langgraph-checkpoint-mysql"


def test_the_trial_database_is_one_per_root(module: Any, tmp_path: Path) -> None:
    one = BuildContext(root=tmp_path / "a", session_id="s")
    assert module.trial_database(one) == module.trial_database(
        BuildContext(root=tmp_path / "a", session_id="other"))
    assert module.trial_database(one) != module.trial_database(
        BuildContext(root=tmp_path / "b", session_id="s"))
    assert module.trial_database(one).startswith("lg_")


@pytest.mark.skipif(not HAVE_PACKAGE, reason="langgraph-checkpoint-mysql is not installed")
def test_without_mariadb_the_lane_is_not_measured_naming_the_server(
        module: Any, tmp_path: Path) -> None:
    from arib.targets.langgraph.services import lane_availability

    manager = ServiceManager(environ={}, binaries={"mysql": str(tmp_path / "no-mariadbd")})
    missing = lane_availability(module.LANES[0], manager)
    assert isinstance(missing, NotMeasured) and missing.name == "lg-mysql"
    assert "mariadbd" in missing.reason and "apt-get install mariadb-server" in missing.reason


@pytest.fixture(scope="module")
def mysql_url() -> Any:
    if not HAVE_PACKAGE:
        pytest.skip("langgraph-checkpoint-mysql is not installed (its lock: "
                    "harness/locks/ecosystem/lg-mysql.txt)")
    with ServiceManager(environ={}) as manager:
        if manager.availability("mysql") is not None:
            pytest.skip("mariadb-server is not installed")
        yield manager.start("mysql").url


def test_builds_claims_hold_and_a_second_build_reads_the_database(
        module: Any, mysql_url: str, tmp_path: Path) -> None:
    from langgraph.checkpoint.base import empty_checkpoint

    lane = module.LANES[0]
    config = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}

    async def scenario() -> None:
        ctx = BuildContext(root=tmp_path / "a", session_id="s", services={"mysql": mysql_url})
        handle = await lane.build(ctx)
        try:
            saver = handle.session
            assert verify_claims(lane, saver) is None
            with pytest.raises(NotImplementedError):  # the sync half is the one it serves
                await saver.aget_tuple(config)
            checkpoint = empty_checkpoint()
            stored = saver.put(config, checkpoint, {"source": "input", "step": 0}, {})
            second = await handle.reopen()
            elsewhere = await lane.build(BuildContext(root=tmp_path / "b", session_id="s",
                                                      services={"mysql": mysql_url}))
            try:
                found = second.session.get_tuple(stored)
                assert found is not None and found.checkpoint["id"] == checkpoint["id"]
                assert list(elsewhere.session.list(None)) == []  # a database per trial root
            finally:
                await second.dispose()
                await elsewhere.dispose()
        finally:
            await handle.dispose()
        database = module.trial_database(ctx)
        assert mysql_query(mysql_url, "SELECT COUNT(*) FROM information_schema.SCHEMATA "
                                      f"WHERE SCHEMA_NAME = '{database}'") == 1

    asyncio.run(scenario())
