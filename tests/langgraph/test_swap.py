"""The LangGraph savers' and stores' generated mutants swap in exactly the code their mutated
module compiles to (see tests/test_swap.py for the mechanism's own tests)."""

from __future__ import annotations

import pytest

from arib.targets.base import TargetSpec
from arib.targets.langgraph.lanes import LANES
from tests.swapcheck import one_lane_per_module, swaps_are_exact


@pytest.mark.parametrize("lane", one_lane_per_module(LANES), ids=lambda lane: lane.name)
def test_every_mutant_swaps_the_code_the_mutated_module_compiles_to(lane: TargetSpec) -> None:
    total, swappable = swaps_are_exact(lane)
    assert total == 0 or swappable > 0
