"""The parity gate is paired with mutants: it passes clean and fails on each killable mutant.

Each mutant makes exactly one backend diverge: it is installed only in the forked children of
its target's lanes, so the gate must name that lane (under every loop) and no other.
"""

from __future__ import annotations

import hashlib
import importlib.util
import shutil
from pathlib import Path
from typing import Any

import pytest

from arib.checks.openai_agents.parity.fault_workflows import FAULT_WORKFLOWS
from arib.checks.openai_agents.parity.workflows import REFERENCE_WORKFLOWS
from arib.ground.errors import MutantDefinitionError, UnknownNameError
from arib.ground.model import ExitCode, Loop, MutantKind
from arib.ground.sources import installed_source
from arib.mutants.base import FORCED, HANDWRITTEN
from arib.mutants.hook import edited_source
from arib.mutants.parity import must_kill, mutant_lane
from arib.mutants.registry import get_mutant, get_parity_mutant, handwritten_mutants, parity_mutants
from arib.parity.gate import GateOptions, check

PARITY_MUTANTS = parity_mutants()
# Enough of the pool to meet every defect: ordering, tool outputs, combining marks.
KILLERS = tuple(
    w
    for w in REFERENCE_WORKFLOWS
    if w.name in ("chat_multi_turn", "tool_call_single", "unicode_edge_cases")
)
MUTANT_TARGETS = sorted({m.target for m in PARITY_MUTANTS if m.target != "reference"})


@pytest.fixture(autouse=True)
def _no_api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)


def bystander(target: str) -> list[str]:
    """A lane that agrees with the reference lane on every workflow a mutant is run with."""
    if target == "reference":
        return []
    return ["sqlite-file" if target == "sqlite-memory" else "sqlite-memory"]


def gate(tmp_path: Path, **kw: Any) -> dict[str, Any]:
    """A small gate: the mutant's lane and a bystander lane (or every mutant target).

    A fault workflow's mutant runs with its own workflow only (no generated case): that is the
    workflow written to see it.
    """
    name = kw.get("mutant")
    mutant = get_parity_mutant(name) if name else None
    lanes = (
        ",".join([mutant_lane(mutant), *bystander(mutant.target)])
        if mutant
        else ",".join(MUTANT_TARGETS)
    )
    settings: dict[str, Any] = {
        "lanes": lanes,
        "loops": (Loop.ASYNCIO,),
        "cases": 2,
        "workflows": KILLERS,
        "results_dir": tmp_path / "results",
    }
    if mutant is not None and mutant.workflow is not None:
        settings["workflows"] = tuple(w for w in FAULT_WORKFLOWS if w.name == mutant.workflow)
        settings["cases"] = 0
    opts = GateOptions(**{**settings, **kw})
    report, folder = check(opts)
    shutil.rmtree(folder)
    return report


def test_every_fault_workflow_is_paired_with_a_mutant() -> None:
    paired = {m.workflow for m in PARITY_MUTANTS if must_kill(m) and m.workflow}
    assert paired == {w.name for w in FAULT_WORKFLOWS}


def test_the_pairing_has_handwritten_and_generated_mutants() -> None:
    kinds = {m.kind for m in PARITY_MUTANTS if must_kill(m)}
    assert kinds == {MutantKind.HANDWRITTEN, MutantKind.GENERATED}
    assert len({m.id for m in PARITY_MUTANTS}) == len(PARITY_MUTANTS)
    for mutant in PARITY_MUTANTS:
        assert mutant.description and mutant.diff()
    with pytest.raises(UnknownNameError, match="'nope'"):
        get_parity_mutant("nope")


def test_the_gate_passes_clean(tmp_path: Path) -> None:
    report = gate(tmp_path)
    assert report["ok"] and report["exit_code"] == ExitCode.OK, report["fail_reasons"]
    assert len(report["lanes"]) == len(MUTANT_TARGETS) + 1
    assert all(lane["mutant"] is None for lane in report["lanes"])


@pytest.mark.parametrize("name", [m.name for m in PARITY_MUTANTS if must_kill(m)])
def test_the_gate_fails_on_each_mutant_and_names_only_its_lane(tmp_path: Path, name: str) -> None:
    mutant = get_parity_mutant(name)
    lane = f"{mutant.target}@{mutant.loop or 'asyncio'}"
    report = gate(tmp_path, mutant=name)
    assert not report["ok"] and report["exit_code"] == ExitCode.VIOLATED, report["fail_reasons"]
    assert report["mutant"]["name"] == name
    differing = {lane for m in report["workflow_mismatches"] for lane in m["differing_lanes"]}
    assert differing == {lane}
    if mutant.workflow is not None:
        assert [m["workflow"] for m in report["workflow_mismatches"]] == [mutant.workflow]
    first = report["workflow_mismatches"][0]["first_differences"][0]
    assert first["lane"] == lane
    assert first["diff"].startswith("--- reference@asyncio read #")
    applied = {lane["name"]: lane["mutant"] for lane in report["lanes"]}
    assert applied.pop(lane) == name
    assert set(applied.values()) == {None}


@pytest.mark.slow
def test_the_gate_fails_under_uvloop_too(tmp_path: Path) -> None:
    report = gate(tmp_path, mutant="parity_sqlite_order_desc", loops=(Loop.UVLOOP,))
    assert report["exit_code"] == ExitCode.VIOLATED
    differing = {lane for m in report["workflow_mismatches"] for lane in m["differing_lanes"]}
    assert differing == {"sqlite-file@uvloop"}


def test_case_mismatches_carry_their_seed_and_replay_command(tmp_path: Path) -> None:
    report = gate(tmp_path, mutant="parity_sqlite_reversed_reads")
    cases = report["generative"]["mismatches"]
    assert cases, "the generated cases must see the reversed reads as well"
    for mismatch in cases:
        (replay,) = mismatch["replay"]
        assert replay["lane"] == "sqlite-file@asyncio"
        assert replay["command"] == (
            f"python -m arib parity check --cases 1 --case-seed {mismatch['case_seed']} "
            "--lanes sqlite-file --loops asyncio --mutant parity_sqlite_reversed_reads"
        )
    assert any("replay: python -m arib parity check" in r for r in report["fail_reasons"])


@pytest.mark.slow
@pytest.mark.parametrize("name", [m.name for m in PARITY_MUTANTS if not must_kill(m)])
def test_an_equivalent_mutant_does_not_fail_the_gate(tmp_path: Path, name: str) -> None:
    report = gate(tmp_path, mutant=name)
    assert report["ok"], report["fail_reasons"]
    assert get_parity_mutant(name).equivalent


def test_generated_mutants_edit_exactly_once_and_never_write_site_packages() -> None:
    for mutant in (m for m in PARITY_MUTANTS if m.kind is MutantKind.GENERATED):
        origin, source = installed_source(mutant.module)
        before = hashlib.sha256(Path(origin).read_bytes()).hexdigest()
        mutated = edited_source(mutant.module, mutant.original, mutant.replacement)
        assert mutated != source and mutated.count(mutant.replacement) >= 1
        assert hashlib.sha256(Path(origin).read_bytes()).hexdigest() == before
    with pytest.raises(MutantDefinitionError, match="matches 0 times"):
        edited_source("agents.memory.sqlite_session", "ORDER BY no_such_column", "ORDER BY id")
    many = installed_source("agents.memory.sqlite_session")[1].count("ORDER BY id")
    assert many > 1
    with pytest.raises(MutantDefinitionError, match=f"matches {many} times"):
        edited_source("agents.memory.sqlite_session", "ORDER BY id", "ORDER BY id DESC")
    assert importlib.util.find_spec("agents.memory.sqlite_session") is not None


def test_parity_mutants_are_kept_apart_from_the_checks_mutants() -> None:
    handwritten_mutants()  # the family's mutants are registered when first asked for
    check_ids = {m.id for m in (*HANDWRITTEN.values(), *FORCED.values())}
    check_names = {m.name for m in (*HANDWRITTEN.values(), *FORCED.values())}
    assert check_ids and check_names
    assert not check_ids & {m.id for m in PARITY_MUTANTS}
    assert not check_names & {m.name for m in PARITY_MUTANTS}
    for mutant in PARITY_MUTANTS:
        with pytest.raises(UnknownNameError, match=repr(mutant.name)):
            get_mutant(mutant.name)
    with pytest.raises(UnknownNameError, match="unknown parity mutant"):
        get_parity_mutant(handwritten_mutants()[0].name)


def _reversed_by_a_generated_parity_mutant() -> list[str]:
    import importlib

    import anyio

    get_parity_mutant("parity_sqlite_order_desc").apply()
    module = importlib.import_module("agents.memory.sqlite_session")
    from agents.memory import sqlite_session  # the parent package attribute is rebound too

    assert sqlite_session is module

    async def run() -> list[str]:
        session = module.SQLiteSession("s")
        await session.add_items([{"role": "user", "content": "a"}])
        await session.add_items([{"role": "user", "content": "b"}])
        items = await session.get_items()
        session.close()
        return [item["content"] for item in items]

    return anyio.run(run)


def test_a_generated_parity_mutant_is_served_by_the_hook_in_a_child_only() -> None:
    from arib.ground.child import ChildStatus, run_one

    outcome = run_one(_reversed_by_a_generated_parity_mutant, timeout_s=60)
    assert outcome.status is ChildStatus.OK, outcome.detail
    assert outcome.value == ["b", "a"]
    import agents.memory.sqlite_session as parent_module

    assert "ORDER BY id ASC" in Path(parent_module.__file__).read_text()
