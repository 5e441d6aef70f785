"""ARIB-KEY-001 and ARIB-BUDGET-001: hold on the reference, kill their hand-written mutants,
abstain where a lane takes no such constructor option; the options reach the backend and
survive reopen()."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from arib.checks.openai_agents.budget_001 import _window
from arib.checks.openai_agents.key_001 import OTHER_KEY
from arib.ground.model import Verdict
from arib.targets.base import BuildContext, Handle, TargetSpec
from arib.targets.openai_agents.reference import REFERENCE
from arib.targets.openai_agents.services import TEST_ENCRYPTION_KEY
from arib.targets.registry import get_target
from tests.checkrun import assert_holds_with_its_trials, assert_mutant_violates, run_small

SMALL: dict[str, dict[str, int]] = {
    "ARIB-KEY-001": {"trials": 2},
    "ARIB-BUDGET-001": {"trials": 2},
}


@pytest.mark.parametrize("check_id", sorted(SMALL))
def test_holds_on_the_reference(check_id: str) -> None:
    assert_holds_with_its_trials(check_id, SMALL[check_id])


@pytest.mark.parametrize(("check_id", "mutant", "mode"), [
    ("ARIB-KEY-001", "reference_pop_drops_unauthenticated_rows", "history_destroyed"),
    ("ARIB-BUDGET-001", "reference_zero_budget_means_unbounded", "invalid_budget_accepted"),
])
def test_hand_written_mutant_is_violated(check_id: str, mutant: str, mode: str) -> None:
    assert_mutant_violates(check_id, SMALL[check_id], mutant, mode)


@pytest.mark.parametrize("check_id", sorted(SMALL))
def test_abstains_on_a_lane_without_the_option(check_id: str) -> None:
    finding = run_small(check_id, SMALL[check_id], lane=get_target("sqlite-file"))
    assert finding.verdict is Verdict.NOT_APPLICABLE
    assert "takes no constructor option" in (finding.reason or "")


def test_the_budget_window_is_the_unbudgeted_answer() -> None:
    items = [1, 2, 3]
    assert _window(items, 0) == []
    assert _window(items, 2) == [2, 3]
    assert _window(items, 5) == items
    assert _window(items, None) == items
    assert _window(items, -1) == items


async def _open(spec: TargetSpec, root: Path, **options: Any) -> Handle:
    return await spec.build(BuildContext(root=root, session_id="s", options=options))


def _lanes() -> list[TargetSpec]:
    return [REFERENCE, get_target("encrypted-sqlite")]


@pytest.mark.parametrize("spec", _lanes(), ids=lambda s: s.name)
def test_options_reach_the_backend_and_survive_reopen(spec: TargetSpec, tmp_path: Path) -> None:
    pytest.importorskip("cryptography")

    async def scenario() -> tuple[list[Any], list[Any]]:
        writer = await _open(spec, tmp_path, encryption_key=TEST_ENCRYPTION_KEY)
        other = await _open(spec, tmp_path, encryption_key=OTHER_KEY, max_scan_items=2)
        again = await other.reopen()
        try:
            await writer.session.add_items([{"content": "a"}, {"content": "b"}])
            await again.session.add_items([{"content": "c"}])
            newest = await again.session.get_items(limit=1)
            with pytest.raises(RuntimeError):  # the reopened budget of 2 cannot see it all
                await again.session.get_items()
            return newest, await writer.session.get_items()
        finally:
            for handle in (again, other, writer):
                await handle.dispose()

    newest, mine = anyio.run(scenario)
    assert newest == [{"content": "c"}]  # key B's own item, read within its budget
    assert mine == [{"content": "a"}, {"content": "b"}]  # key A reads none of key B's
