"""The LangGraph family record, its version label and its lanes' basic behaviour."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from arib.admission import reference_file
from arib.checks.registry import get_check
from arib.ground.errors import UnknownNameError
from arib.ground.family import get_family
from arib.targets.base import BuildContext
from arib.targets.langgraph.lanes import API, CHECKPOINTER_LANES, read_checkpoints

ROOT = Path(__file__).resolve().parents[2]


def test_version_names_the_three_components() -> None:
    family = get_family("langgraph")
    version = family.version()
    parts = family.component_versions(version)
    assert set(parts) == {"langgraph-checkpoint", "langgraph-checkpoint-sqlite",
                          "langgraph-checkpoint-postgres"}
    assert all(v != "not-installed" for v in parts.values())
    assert family.lock_file(version) is not None


@pytest.mark.parametrize("bad", ["4.3.2", "cp4.3.2+sq3.1.2", "cp+sq3.1.2+pg3.2.0"])
def test_a_malformed_version_is_refused_naming_the_form(bad: str) -> None:
    with pytest.raises(UnknownNameError, match=r"cp<version>\+sq<version>\+pg<version>"):
        get_family("langgraph").component_versions(bad)


def test_every_lane_has_its_api_and_reads_back_what_it_was_given(tmp_path: Path) -> None:
    from arib.checks.langgraph._saver import call, config, make_checkpoint

    lanes = [lane for lane in CHECKPOINTER_LANES if lane.service is None]  # servers: test_lanes

    async def one(lane_index: int) -> list[str]:
        lane = lanes[lane_index]
        root = tmp_path / lane.name
        root.mkdir()
        handle = await lane.build(BuildContext(root=root, session_id="s"))
        try:
            cp, versions = make_checkpoint(handle.session, 7, 0, {"a": 1})
            await call(handle.session, "put", config("t"), cp, {"step": 0}, versions)
            return [t.checkpoint["id"] for t in await read_checkpoints(handle.session)]
        finally:
            await handle.dispose()

    for index, lane in enumerate(lanes):
        assert API[lane.name] in ("sync", "async", "both")
        assert anyio.run(one, index) == ["00000000-0000-6000-8000-000000000007"], lane.name


def test_list_names_the_family_lanes() -> None:
    out = subprocess.run([sys.executable, "-m", "arib", "--family", "langgraph", "list"],
                         cwd=ROOT, capture_output=True, text=True, check=True).stdout
    assert "ARIB-CKPT-001" in out and "lg-reference" in out and "lg-sqlite-file" in out


def test_the_family_names_its_three_distributions() -> None:
    from arib.targets.langgraph.family import LANGGRAPH

    assert LANGGRAPH.distributions == {"langgraph-checkpoint", "langgraph-checkpoint-sqlite",
                                       "langgraph-checkpoint-postgres"}


def test_a_failed_clean_gate_names_the_reference_of_the_checks_own_family() -> None:
    assert reference_file(get_check("ARIB-LGCANCEL-001")) == "targets/langgraph/reference.py"
    assert reference_file(get_check("ARIB-LGSTORE-011")) == \
        "targets/langgraph/reference_store.py"
