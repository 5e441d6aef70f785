"""The third-party LangGraph lanes of targets/ecosystem (the package ``arib-ecosystem``), declared
as a user outside the project declares lanes: the entry point loads them as TargetSpecs with
their names, claims and traits; where a lane's package is not installed (this family's own
environment has none of them) it is not measured, naming the package, and the others go on.
Where a package is installed (its ``nox -s ecosystem`` environment), each of its lanes builds,
its KIND and API are verified on the object, and a second build on the root reads the store."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator, Mapping
from pathlib import Path

import anyio
import pytest
import tomllib

from arib.checks.langgraph._saver import call, config, make_checkpoint
from arib.ground.family import plugin_lanes
from arib.ground.services import ServiceManager
from arib.lanes import prepare_lanes
from arib.targets.base import BuildContext, TargetSpec, verify_claims
from arib.targets.langgraph import lanes as lg
from arib.targets.registry import family_lanes, get_target

ROOT = Path(__file__).resolve().parents[2]
ECOSYSTEM = ROOT / "targets" / "ecosystem"
NAMES = ["lg-duckdb", "lg-duckdb-async", "lg-lmdb", "lg-lmdb-async", "lg-plainredis",
         "lg-plainredis-async", "lg-mysql"]
PACKAGES = {"lg-duckdb": "langgraph-checkpoint-duckdb", "lg-lmdb": "langgraph-checkpoint-lmdb",
            "lg-plainredis": "langgraph-checkpoint-plainredis",
            "lg-mysql": "langgraph-checkpoint-mysql"}
IMPORTS = {"langgraph-checkpoint-duckdb": "langgraph.checkpoint.duckdb",
           "langgraph-checkpoint-lmdb": "langgraph_checkpoint_lmdb",
           "langgraph-checkpoint-plainredis": "langgraph_checkpoint_plainredis",
           "langgraph-checkpoint-mysql": "langgraph.checkpoint.mysql"}

# Which half each class serves: the async savers of -lmdb and -plainredis refuse their sync half
# from every thread, as their packages document (arib_ecosystem.langgraph).
API = {"lg-duckdb": "sync", "lg-duckdb-async": "async", "lg-lmdb": "sync",
       "lg-lmdb-async": "async-only", "lg-plainredis": "sync",
       "lg-plainredis-async": "async-only", "lg-mysql": "sync"}


def _package(lane: str) -> str:
    return PACKAGES[lane.removesuffix("-async")]


def _installed(lane: str) -> bool:
    try:
        return importlib.util.find_spec(IMPORTS[_package(lane)]) is not None
    except ModuleNotFoundError:
        return False


@pytest.fixture
def ecosystem(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """arib-ecosystem's entry points as pip installs them (a .dist-info on the path), with its
    package folder on the path: what `pip install -e targets/ecosystem` makes."""
    info = tmp_path / "arib_ecosystem-0.1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: arib-ecosystem\n"
                                   "Version: 0.1.0\n")
    table = tomllib.loads((ECOSYSTEM / "pyproject.toml").read_text())
    group = table["project"]["entry-points"]["arib.lanes.langgraph"]
    (info / "entry_points.txt").write_text(
        "[arib.lanes.langgraph]\n" + "".join(f"{k} = {v}\n" for k, v in group.items()))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.syspath_prepend(str(ECOSYSTEM))
    plugin_lanes.cache_clear()
    yield tmp_path
    plugin_lanes.cache_clear()


def test_the_entry_point_loads_every_lane_with_its_name_claims_and_traits(
        ecosystem: Path) -> None:
    names = [t.name for t in family_lanes()]
    assert names[len(lg.LANES):] == NAMES  # after the family's own, each keeping its name
    for name in NAMES:
        lane = get_target(name)
        assert isinstance(lane, TargetSpec) and lane.distribution == _package(name)
        assert lane.traits["kind"] == "checkpointer" == lg.KIND[name]
        assert lg.API[name] == API[name]
        assert lane.claims.has_close == (name == "lg-plainredis")  # RedisSaver.close()
        assert lane.service == {"lg-plainredis": "redis", "lg-plainredis-async": "redis",
                                "lg-mysql": "mysql"}.get(name)
    assert lg.KIND["lg-memory"] == "checkpointer" and "lg-duckdb" in set(lg.API)
    assert get_target("lg-duckdb").to_json()["traits"]["store"] == "file"
    for name in NAMES:  # DuckDB's documented model: one writing process per database file
        why = lg.one_process(get_target(name))
        assert (why is not None) == name.startswith("lg-duckdb"), name
        assert why is None or "but all within that single writer process." in why
    assert "traits" not in lg.MEMORY.to_json()  # the family's own lanes' JSON is unchanged


def test_a_lane_whose_package_is_absent_is_not_measured_naming_it(ecosystem: Path) -> None:
    absent = [name for name in NAMES if not _installed(name)]
    if not absent:
        pytest.skip("every third-party package is installed here")
    with ServiceManager(environ={}) as manager:
        prepared = prepare_lanes([get_target(n) for n in [*absent, "lg-memory"]], manager,
                                 probe=False)
    reasons = {n.name: n.reason for n in prepared.not_measured}
    assert [t.name for t in prepared.lanes] == ["lg-memory"]  # the others go on
    for name in absent:
        assert reasons[name].startswith(f"not measured, because {_package(name)} is not "
                                        f"installed"), reasons[name]


@pytest.mark.parametrize("name", NAMES)
def test_an_installed_lane_builds_its_claims_hold_and_a_second_build_reads_its_store(
        name: str, ecosystem: Path, tmp_path: Path) -> None:
    if not _installed(name):
        pytest.skip(f"{_package(name)} is not installed here (its nox -s ecosystem env)")
    lane = get_target(name)

    async def main(services: Mapping[str, str]) -> tuple[str | None, str | None, str, str]:
        ctx = BuildContext(tmp_path / "trial", "s", dict(services))
        ctx.root.mkdir()
        first = await lane.build(ctx)
        try:
            claim = verify_claims(lane, first.session) or await lg.verify_api(lane,
                                                                              first.session)
            cp, versions = make_checkpoint(first.session, 3, 0, {"a": "x"}, history=False)
            await call(first.session, "put", config("t"), cp, {"step": 0}, versions)
            second = await first.reopen()
            try:
                got = await call(second.session, "get_tuple", config("t"))
            finally:
                await second.dispose()
        finally:
            await first.dispose()
        return claim, None if got is None else str(got.checkpoint["id"]), str(cp["id"]), ""

    with ServiceManager(environ={}) as manager:
        if lane.service is not None:
            if manager.availability(lane.service) is not None:
                pytest.skip(f"no {lane.service} server here")
            manager.start(lane.service)
        claim, got, put, _ = anyio.run(main, dict(manager.services))
    assert claim is None
    assert got == put


def test_a_plugin_lanes_false_or_missing_traits_are_refused_naming_the_lane(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import dataclasses

    false = dataclasses.replace(lg.MEMORY, name="plug-memory",
                                traits={"kind": "checkpointer", "api": "sync"})
    bare = dataclasses.replace(lg.MEMORY, name="plug-bare")
    monkeypatch.setattr(lg, "plugin_specs", lambda: (false, bare))

    async def main() -> tuple[str | None, str | None]:
        saver = (await false.build(BuildContext(Path("."), "s"))).session
        return await lg.verify_api(false, saver), await lg.verify_api(bare, saver)

    wrong, missing = anyio.run(main)
    assert wrong is not None and wrong.startswith("false claim by target 'plug-memory': API "
                                                  "says 'sync'")
    assert missing is not None and "lane 'plug-bare' has no KIND or API entry" in missing


def test_a_class_lane_of_the_survey_has_the_kind_and_api_of_the_lane_it_comes_from(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import dataclasses

    plug = dataclasses.replace(lg.MEMORY, name="plug-memory",
                               traits={"kind": "checkpointer", "api": "both"})
    monkeypatch.setattr(lg, "plugin_specs", lambda: (plug,))
    # arib.survey.user.store_lanes names one more class's lane "<lane>[<Class>]"
    assert (lg.KIND.get("plug-memory[Base]"), lg.API.get("plug-memory[Base]")) == \
        ("checkpointer", "both")
    assert lg.API.get("lg-sqlite-file[Base]") == "sync"
    for name in ("plug-other[Base]", "plug-memory[Base", "[Base]", "plug-memoryX"):
        assert lg.KIND.get(name) is None
