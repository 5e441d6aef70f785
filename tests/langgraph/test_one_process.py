"""A lane whose store one process at a time may write (``traits["processes"] = "one"`` with the
documentation's words, arib.targets.langgraph.lanes.one_process): the checks forking several
writer processes onto one store (ARIB-LGCONC-002, ARIB-LGSETUP-001) abstain there with those
words once a writer could not open the store beside another, and judge as before where every
writer could; a malformed trait is a false claim. The lanes are our reference on a store that
admits one open instance at a time (an exclusive lock of a file of its root)."""

from __future__ import annotations

import dataclasses
import fcntl
import os
from pathlib import Path

import anyio
import pytest

from arib.ground.model import Verdict
from arib.targets.base import BuildContext, Handle, TargetSpec
from arib.targets.langgraph import lanes as lg
from tests.checkrun import run_small

WORDS = "Our test's documentation: \"one process can write to the store\""
PARAMS = {
    "ARIB-LGCONC-002": {"trials": 1, "processes": 3, "steps": 2, "threads": 2},
    "ARIB-LGSETUP-001": {"trials": 1, "processes": 3, "steps": 1},
}


async def _one_at_a_time(ctx: BuildContext) -> Handle:
    """Our reference on ``ctx.root``, refusing to open while another instance has it open."""
    fd = os.open(ctx.root / "one-writer.lock", os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise OSError("the store is open in another instance") from None
    handle = await lg.REFERENCE.build(ctx)

    async def dispose() -> None:
        await handle.dispose()
        os.close(fd)

    return Handle(session=handle.session, reopen=lambda: _one_at_a_time(ctx), dispose=dispose)


def _lane(name: str, *, exclusive: bool, processes: str | None = "one",
          why: str = WORDS) -> TargetSpec:
    traits = {"kind": "checkpointer", "api": "both",
              **({"processes": processes, "processes_why": why} if processes else {})}
    return dataclasses.replace(lg.REFERENCE, name=name, traits=traits, reference=False,
                               build=_one_at_a_time if exclusive else lg.REFERENCE.build)


@pytest.fixture
def plugins(monkeypatch: pytest.MonkeyPatch) -> list[TargetSpec]:
    """The test's lanes, served as plugin lanes (so that KIND and API name them)."""
    found: list[TargetSpec] = []
    monkeypatch.setattr(lg, "plugin_specs", lambda: tuple(found))
    return found


@pytest.mark.parametrize("check_id", sorted(PARAMS))
def test_a_one_process_store_abstains_with_the_documented_words(
        check_id: str, plugins: list[TargetSpec]) -> None:
    lane = _lane("one-writer", exclusive=True)
    plugins.append(lane)
    finding = run_small(check_id, PARAMS[check_id], lane=lane)
    assert finding.verdict is Verdict.NOT_APPLICABLE, (finding.modes, finding.samples)
    reason = finding.reason or ""
    assert WORDS in reason and "'one-writer' keeps its store where one process" in reason
    assert "could not open it beside another" in reason
    assert "the store is open in another instance" in reason  # the refusal seen


@pytest.mark.parametrize("check_id", sorted(PARAMS))
def test_without_the_trait_the_refusing_store_is_violated(
        check_id: str, plugins: list[TargetSpec]) -> None:
    lane = _lane("one-writer-undeclared", exclusive=True, processes=None)
    plugins.append(lane)
    finding = run_small(check_id, PARAMS[check_id], lane=lane)
    assert finding.verdict is Verdict.VIOLATED, (finding.modes, finding.reason)
    assert any("the store is open in another instance" in s for s in finding.samples)


def test_the_trait_abstains_only_on_a_refusal_seen(plugins: list[TargetSpec]) -> None:
    # declared, but every writer opens the store: judged as on any lane (our reference holds)
    lane = _lane("one-writer-open", exclusive=False)
    plugins.append(lane)
    finding = run_small("ARIB-LGCONC-002", PARAMS["ARIB-LGCONC-002"], lane=lane)
    assert finding.verdict is Verdict.HELD, (finding.modes, finding.samples, finding.reason)


@pytest.mark.parametrize(("processes", "why"), [("many", WORDS), ("one", "")])
def test_a_malformed_processes_trait_is_a_false_claim(
        processes: str, why: str, plugins: list[TargetSpec], tmp_path: Path) -> None:
    lane = _lane("one-writer-bad", exclusive=False, processes=processes, why=why)
    plugins.append(lane)

    async def main() -> str | None:
        handle = await lane.build(BuildContext(tmp_path, "s"))
        try:
            return await lg.verify_api(lane, handle.session)
        finally:
            await handle.dispose()

    found = anyio.run(main)
    assert found is not None and found.startswith(
        f"lane 'one-writer-bad' declares processes={processes!r}"), found
    assert lg.one_process(lane) is None
