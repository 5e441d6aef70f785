"""``python -m arib parity``: every argument is checked before any server starts, and only
the servers of the named lanes are started."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from arib.cli.main import main
from arib.ground.errors import ServiceError
from arib.ground.model import ExitCode
from arib.ground.services import ServiceManager


@pytest.fixture
def servers(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every server the run asks for (none is really started: each start fails)."""
    asked: list[str] = []

    def start(self: ServiceManager, name: str) -> Any:
        asked.append(name)
        raise ServiceError(f"{name} not started by this test")

    monkeypatch.setattr(ServiceManager, "start", start)
    return asked


@pytest.fixture
def gate_calls(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """Each call of the gate itself, with the service lanes and reasons it was given."""
    calls: list[dict[str, Any]] = []

    def handle(args: Any, extra: Any = (), services: Any = None, unavailable: Any = ()) -> int:
        calls.append({"lanes": [t.name for t in extra], "unavailable": dict(unavailable)})
        return 0

    monkeypatch.setattr("arib.parity.cli.handle", handle)
    return calls


@pytest.mark.parametrize(
    ("argv", "named"),
    [
        (["--lanes", "nope"], "'nope'"),
        (["--lanes", "redis-from-url@trio"], "'trio'"),
        (["--loops", "trio"], "'trio'"),
        (["--budget-ms", "0"], "budget_ms"),
        (["--cases", "-1"], "cases"),
        (["--case-seed", "-3"], "case_seed"),
        (["--p95-min-samples", "0"], "p95_min_samples"),
        (["--lane-timeout-s", "0"], "lane_timeout_s"),
        (["--workers", "0"], "workers"),
        (["--mutant", "nope"], "'nope'"),
        (["--out", "results/parity/x.json"], "inside the results folder"),
    ],
)
def test_a_bad_argument_exits_2_before_any_server_starts(
    argv: list[str], named: str, servers: list[str], gate_calls: list[dict[str, Any]],
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    extra = ["--results", str(tmp_path / "results")] if "--out" in argv else []
    if extra:
        argv = ["--out", str(tmp_path / "results" / "parity" / "x.json")]
    assert main(["parity", "check", *argv, *extra]) == ExitCode.USAGE
    assert named in capsys.readouterr().err
    assert servers == [] and gate_calls == []


def test_an_unknown_lane_lists_the_service_lanes_too(
    servers: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["parity", "check", "--lanes", "nope"]) == ExitCode.USAGE
    err = capsys.readouterr().err
    assert "'nope'" in err and "sqlite-memory" in err and "redis-from-url" in err
    assert servers == []


def test_only_the_servers_of_the_named_lanes_are_started(
    servers: list[str], gate_calls: list[dict[str, Any]]
) -> None:
    assert main(["parity", "check", "--lanes", "sqlite-memory"]) == 0
    assert servers == [] and gate_calls[-1]["lanes"] == []
    assert main(["parity", "check", "--lanes", "sqlite-file,redis-from-url@uvloop"]) == 0
    assert servers == ["redis"]
    # The server could not be had: the lane is named with the reason, not dropped silently.
    assert "redis not started by this test" in gate_calls[-1]["unavailable"]["redis-from-url"]
    servers.clear()
    assert main(["parity", "check"]) == 0
    assert set(servers) == {"redis", "postgres"}


def test_service_lanes_start_spread_among_the_local_lanes() -> None:
    from arib.checks.openai_agents.parity.kind import AGENT_KIND
    from arib.ground.model import Loop
    from arib.parity.gate import spread_service_lanes
    from arib.parity.lanes import select_lanes

    targets = AGENT_KIND.service_targets()
    services = {t.service: "unused://" for t in targets if t.service}
    lanes, _ = select_lanes(AGENT_KIND, None, (Loop.ASYNCIO, Loop.UVLOOP), (), services)
    order = [lane for lane, _ in spread_service_lanes([(lane, {}) for lane in lanes])]
    assert sorted(lane.name for lane in order) == sorted(lane.name for lane in lanes)
    served = [i for i, lane in enumerate(order) if lane.target.service is not None]
    gaps = [b - a for a, b in zip(served, served[1:], strict=False)]
    assert len(served) >= 2 and min(gaps) > 1
    local = [(lane, {}) for lane in lanes if lane.target.service is None]
    assert spread_service_lanes(local) == local
