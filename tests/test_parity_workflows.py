"""Unit tests of the parity gate's parts: workflows, digests, normalization, cases, lanes."""

from __future__ import annotations

import hashlib
import json
import tempfile
from pathlib import Path

import anyio
import pytest

from arib.checks.openai_agents.parity.kind import AGENT_KIND, RULES
from arib.checks.openai_agents.parity.steps import Read, canonical_json, digest, display
from arib.checks.openai_agents.parity.workflows import (
    REFERENCE_WORKFLOWS,
    Workflow,
    run_workflow,
    step_pool,
)
from arib.checks.parity.normalize import NormalizationRule, normalize_reads
from arib.ground.errors import UnknownNameError, UsageError
from arib.ground.model import Loop
from arib.parity.generative import (
    DEFAULT_CASES,
    GENERATIVE_DOMAIN,
    OPERATORS,
    case_seed,
    compose,
    generate,
    replay_command,
)
from arib.parity.lanes import parse_loops, select_lanes
from arib.targets.base import BuildContext

POOL = AGENT_KIND.cases
assert POOL is not None


@pytest.fixture(autouse=True)
def _no_api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)


REQUIRED_DOMAINS = {
    "chat",
    "tools",
    "handoff",
    "structured",
    "retry",
    "correction",
    "limit",
    "clear",
    "content",
    "cancel",
}


def test_pool_has_enough_named_workflows_in_every_required_domain() -> None:
    names = [w.name for w in REFERENCE_WORKFLOWS]
    assert len(names) >= 12
    assert len(set(names)) == len(names)
    assert REQUIRED_DOMAINS <= {w.domain for w in REFERENCE_WORKFLOWS}
    kinds = {s.kind for s in step_pool()}
    assert {"settings_limit", "cancel_retry", "raise_retry", "pop_turn", "large"} <= kinds


def test_canonical_json_and_digest_follow_the_contract() -> None:
    value = {"b": [1, (2, 3)], "a": "é ✓"}
    text = '{"a":"é ✓","b":[1,[2,3]]}'
    assert canonical_json(value) == text
    assert digest(value) == hashlib.sha256(text.encode("utf-8")).hexdigest()


def test_display_shortens_long_strings_but_keeps_their_digest() -> None:
    long = "x" * 1000
    shown = display({"content": long, "n": 1})
    assert shown["n"] == 1
    assert "1000 chars" in shown["content"]
    assert hashlib.sha256(long.encode()).hexdigest()[:16] in shown["content"]


async def _run_on(target_name: str, workflow: Workflow) -> object:
    lanes, _ = select_lanes(AGENT_KIND, target_name, (Loop.ASYNCIO,))
    lane = lanes[-1]
    with tempfile.TemporaryDirectory() as tmp:
        handle = await lane.target.build(BuildContext(Path(tmp), f"parity-{workflow.name}"))
        try:
            return await run_workflow(workflow, handle.session, lane=lane.name)
        finally:
            await handle.dispose()


@pytest.mark.parametrize(
    "name", ["tool_calls_parallel", "cancelled_turn_retry", "raise_and_retry", "pop_item_undo"]
)
def test_a_workflow_is_deterministic_and_equal_on_reference_and_sqlite_memory(name: str) -> None:
    workflow = next(w for w in REFERENCE_WORKFLOWS if w.name == name)
    first = anyio.run(_run_on, "reference", workflow)
    again = anyio.run(_run_on, "reference", workflow)
    sqlite = anyio.run(_run_on, "sqlite-memory", workflow)
    assert first.ok and again.ok and sqlite.ok, (first.error, sqlite.error)
    assert first.replay_hash == again.replay_hash == sqlite.replay_hash
    assert first.replay_hash_normalized is None  # no rule applies to the reference pool
    assert first.read_hashes == sqlite.read_hashes
    assert len(first.read_labels) >= 3


def test_cancelled_turn_records_the_cancellation_and_the_retry() -> None:
    workflow = next(w for w in REFERENCE_WORKFLOWS if w.name == "cancelled_turn_retry")
    result = anyio.run(_run_on, "sqlite-memory", workflow)
    labels = list(result.read_labels)
    assert "01.cancel_retry/cancelled" in labels
    cancelled = result.reads[labels.index("01.cancel_retry/cancelled")]
    assert cancelled.items == [{"cancelled": True, "finished": False}]


def test_every_read_is_recorded_with_limit_and_model_inputs() -> None:
    workflow = next(w for w in REFERENCE_WORKFLOWS if w.name == "session_settings_limit")
    result = anyio.run(_run_on, "reference", workflow)
    limited = result.reads[list(result.read_labels).index("03.settings_limit/model_input#1")]
    assert len(limited.items) == 2  # SessionSettings(limit=1) history + the new user message
    assert limited.items[-1] == {"role": "user", "content": "Fourth, limited to 1."}


def test_normalization_applies_only_where_a_rule_matches() -> None:
    reads = [Read("00.chat/get_items", [{"id": "run-8f3a", "content": "hi"}, {"content": "x"}])]
    rule = NormalizationRule(
        id="test-run-id", field="id", pattern=r"run-[0-9a-f]+", reason="generated per run"
    )
    normalized, used = normalize_reads(reads, lane="l@asyncio", domain="chat", rules=[rule])
    assert used == ("test-run-id",)
    assert normalized[0].items == [
        {"id": "<normalized:test-run-id>", "content": "hi"},
        {"content": "x"},
    ]
    assert reads[0].items[0]["id"] == "run-8f3a"  # raw reads untouched
    same, none = normalize_reads(
        reads,
        lane="l@asyncio",
        domain="tools",
        rules=[NormalizationRule(id="r", field="id", pattern=".*", reason="x", domains="chat")],
    )
    assert none == () and same == reads
    _, unused = normalize_reads(
        [Read("x", [{"content": "no id"}])], lane="l", domain="chat", rules=[rule]
    )
    assert unused == ()


def test_every_written_rule_has_a_reason() -> None:
    for rule in RULES:
        assert rule.reason and rule.field and rule.id


def test_generated_cases_are_deterministic_distinct_and_composed_from_the_pool() -> None:
    cases = generate(AGENT_KIND, seed=7)
    assert len(cases) == DEFAULT_CASES >= 40
    assert generate(AGENT_KIND, seed=7) == cases
    assert len({c.seed for c in cases}) == len(cases)
    assert len({tuple(map(repr, c.workflow.steps)) for c in cases}) >= 30
    pool = set(step_pool())
    for case in cases:
        assert case.workflow.domain == GENERATIVE_DOMAIN
        assert case.workflow.steps
        assert set(case.operators) <= set(OPERATORS)
        assert all(step in pool or step.kind == "limit_reads" for step in case.workflow.steps)
    assert {op for c in cases for op in c.operators} == set(OPERATORS)
    assert compose(cases[3].seed, POOL) == cases[3]
    assert generate(AGENT_KIND, seed=7, only_case_seed=cases[5].seed) == (cases[5],)
    assert case_seed(7, 5) == cases[5].seed


def test_replay_command_names_the_case_seed_lane_and_loop() -> None:
    case = compose(12345, POOL)
    assert replay_command(case, "sqlite-file@uvloop") == (
        "python -m arib parity check --cases 1 --case-seed 12345 --lanes sqlite-file "
        "--loops uvloop"
    )
    assert replay_command(case, "x@asyncio", "m1").endswith("--mutant m1")


def test_lane_selection_always_starts_with_the_reference_lane() -> None:
    lanes, _ = select_lanes(AGENT_KIND, None, (Loop.ASYNCIO, Loop.UVLOOP))
    names = [lane.name for lane in lanes]
    assert names[0] == AGENT_KIND.reference_lane == "reference@asyncio"
    assert "reference@uvloop" in names
    for target in (
        "sqlite-file",
        "async-sqlite-file",
        "advanced-sqlite-file",
        "sqlalchemy-sqlite-file",
        "sqlite-memory",
        "sqlalchemy-memory",
    ):
        assert f"{target}@asyncio" in names and f"{target}@uvloop" in names
    only, _ = select_lanes(AGENT_KIND, "sqlite-memory@uvloop", (Loop.ASYNCIO,))
    assert [lane.name for lane in only] == ["reference@asyncio", "sqlite-memory@uvloop"]


def test_bad_lane_and_loop_names_are_usage_errors_naming_the_value() -> None:
    with pytest.raises(UnknownNameError, match="'nope'"):
        select_lanes(AGENT_KIND, "nope", (Loop.ASYNCIO,))
    with pytest.raises(UsageError, match="'trio'"):
        parse_loops("asyncio,trio")
    assert parse_loops(None) == (Loop.ASYNCIO, Loop.UVLOOP)


def test_workflow_json_lists_its_steps() -> None:
    data = REFERENCE_WORKFLOWS[0].to_json()
    assert data["name"] == "chat_multi_turn" and data["steps"] == ["chat", "chat", "chat"]
    json.dumps(data)
