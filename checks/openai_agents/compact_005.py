"""ARIB-COMPACT-005: a compaction approved while tool outputs were pending is not lost.

When a model response calls a local tool, the Runner must not compact yet: the call and its
output still belong to that response chain. The wrapper records the hook's approval
(``_defer_compaction``) and forces the compaction at the next settled save, without asking
the hook again. Agent code relies on that: a periodic trigger that approved at the tool step
must get the compaction it approved. Each trial (fresh store, seed):

1. X's stored conversation is seeded; the agent has one function tool;
2. one Runner turn: the model calls the tool, the tool answers, the model replies; the
   decision hook approves the first time it is asked and declines after that;
3. judged: exactly one compact request, covering the whole history with the tool call and its
   output together; the history is then exactly the compact output (through the Runner's
   session and a fresh instance), and a later append lands after it.

On an EncryptedSession lane the encryption sits inside the wrapper (even trials) or outside
it (odd trials: EncryptedSession then routes the deferral itself); the
whole history is always sent (a bounded window makes the wrapper ask the hook again). On a
store private to one instance (``SQLiteSession(":memory:")``) the reads go through X itself.
"""

from __future__ import annotations

import functools
import json
from typing import Any

import anyio

from arib.checks.base import CheckSpec, NotApplicable, Selector, TrialContext, describe
from arib.checks.common import tally, trials_param
from arib.checks.openai_agents._compaction import (
    OWN_KEY,
    PRELOAD,
    TURN_TIMEOUT_S,
    CompactClient,
    Reads,
    compaction_class,
    history,
    is_encrypted,
    is_user,
    pairs_param,
    raised_trial,
    request_problem,
    turn_model,
    view,
)
from arib.checks.openai_agents._compaction import Expectation as Expected
from arib.checks.openai_agents._stores import reader_of
from arib.ground.model import Trial


class AtCount:
    """A decision hook that approves when there are exactly ``count`` candidate items, as a
    periodic trigger ("every N candidates") does; it records how often it was asked."""

    def __init__(self, count: int) -> None:
        self.count = count
        self.asked = 0

    def __call__(self, context: dict[str, Any]) -> bool:
        self.asked += 1
        return len(context["compaction_candidate_items"]) == self.count


def lookup(query: str) -> str:
    """Look a term up (deterministic, offline)."""
    return f"found: {query}"


@functools.cache
def lookup_tool() -> Any:
    """``lookup`` as the SDK's function tool (made once; the SDK is imported here, not when
    the checks are listed)."""
    from agents import function_tool

    return function_tool(lookup)


def tool_model(tag: str) -> Any:
    """First call: a function call to ``lookup``; then one assistant message per call."""
    from agents.items import ModelResponse
    from agents.models.interface import Model
    from agents.usage import Usage
    from openai.types.responses import ResponseFunctionToolCall

    answer = turn_model(tag)

    class ToolModel(Model):
        calls = 0

        async def get_response(self, *args: Any, **kwargs: Any) -> Any:
            ToolModel.calls += 1
            if ToolModel.calls > 1:
                return await answer.get_response(*args, **kwargs)
            call = ResponseFunctionToolCall(
                id=f"fc_{tag}", call_id=f"call_{tag}", type="function_call", name="lookup",
                arguments=json.dumps({"query": tag}), status="completed")
            return ModelResponse(output=[call], usage=Usage(), response_id=f"resp_{tag}_tool")

        def stream_response(self, *args: Any, **kwargs: Any) -> Any:
            raise NotImplementedError("the compaction checks never stream")

    return ToolModel()


def tool_turn_items(tag: str, text: str) -> list[Any]:
    """What the turn appends: input, the call, its output, the answer."""
    return [
        {"role": "user", "content": text},
        {"id": f"fc_{tag}", "call_id": f"call_{tag}", "type": "function_call", "name": "lookup",
         "arguments": json.dumps({"query": tag}), "status": "completed"},
        {"call_id": f"call_{tag}", "type": "function_call_output", "output": f"found: {tag}"},
        {"id": f"msg_{tag}_1", "type": "message", "role": "assistant", "status": "completed",
         "content": [{"type": "output_text", "text": f"{tag} answer 1", "annotations": []}]},
    ]


async def run_trial(ctx: TrialContext) -> Trial:
    """One trial: compaction approved at a tool step; exactly one compact request must follow."""
    compaction = compaction_class()
    tag = f"{ctx.seed:016x}"[:10]
    handle = await ctx.open()
    store = view(handle.session)
    mine = history(tag, ctx.rng.randint(1, ctx.params["pairs"]), ctx.rng.random() < 0.3)
    mode = ctx.rng.choice(("auto", "input"))
    outside = is_encrypted(store) and ctx.index % 2 == 1
    try:
        ctx.log(f"X.add_items({len(mine)})")
        await store.add_items(mine)
    except NotApplicable:
        raise  # no second instance can open this store: the check abstains
    except Exception as exc:  # noqa: BLE001 - a store that cannot be written shows nothing
        return raised_trial(ctx, "seeding the history", exc)
    client = CompactClient(tag)
    # The candidates once the tool call and its output are stored: the assistant items so far
    # and those two. The answer that follows adds one more, so the hook declines then.
    hook = AtCount(sum(1 for item in mine if not is_user(item)) + 2)
    kwargs = {"client": client, "compaction_mode": mode, "should_trigger_compaction": hook}
    if outside:
        inner = compaction(store.session_id, store.underlying_session, **kwargs)
        outer = type(store)(store.session_id, inner, OWN_KEY, ttl=store.ttl)
    else:
        outer = compaction(store.session_id, store, **kwargs)
    text = f"{tag} look it up"
    from agents import Agent, RunConfig, Runner

    agent = Agent(name="compactor", model=tool_model(tag), tools=[lookup_tool()])
    ctx.log(f"Runner.run(turn with a tool call) on "
            f"{'encrypted(compaction(store))' if outside else 'compaction'}(mode={mode!r}); "
            f"the hook approves at exactly {hook.count} candidates")
    reads = Reads()
    try:
        with anyio.fail_after(TURN_TIMEOUT_S):
            await Runner.run(agent, text, session=outer,
                             run_config=RunConfig(tracing_disabled=True))
    except Exception as exc:  # noqa: BLE001 - a turn that raises is evidence
        reads.note("turn_raised", describe(exc) if not isinstance(exc, TimeoutError)
                   else f"the turn did not return within {TURN_TIMEOUT_S:.0f}s")
    stored = mine + tool_turn_items(tag, text)
    ctx.log(f"the hook was asked {hook.asked} times; {len(client.requests)} compact requests")
    expected = stored
    if len(client.requests) != 1:
        reads.note("deferral_lost", f"{len(client.requests)} compact requests after the hook "
                                    f"approved at the tool step (asked {hook.asked} times)")
    else:
        resolved = "previous_response_id" if mode == "auto" else "input"
        wrong = request_problem(client.requests[0], Expected(True, 0, resolved), stored,
                                f"resp_{tag}_1")
        if wrong:
            reads.note("wrong_request", wrong)
        if client.outputs:
            expected = client.outputs[0]
    try:
        fresh = view(await reader_of(ctx, handle))
    except NotApplicable:
        raise  # no second instance can open this store: the check abstains
    except Exception as exc:  # noqa: BLE001 - a store that cannot be reopened shows nothing
        return raised_trial(ctx, "reopening the store", exc)
    await reads.expect(ctx, "runner_session", outer, expected)
    seen = await reads.expect(ctx, "fresh", fresh, expected)
    counts = tally(expected, seen or [], raised=reads.raised)
    return reads.trial(ctx, counts, "compacted" if len(client.requests) == 1 else "unchanged")


CHECK = CheckSpec(
    id="ARIB-COMPACT-005",
    invariant="a compaction the decision hook approved while a turn's tool output was pending "
    "happens once the output is stored, without asking the hook again: one compact request "
    "covering the tool call and its output together, and the history is then its output",
    fault="one Runner turn whose model calls a function tool before answering, through "
    "OpenAIResponsesCompactionSession (stand-in compact client) with a decision hook that "
    "approves at exactly the candidate count reached when the tool output is stored",
    params=(pairs_param(3), trials_param(4)),
    run_trial=run_trial,
    mutants=("reference_compaction_keeps_old_suffix",),
    generated=(
        Selector("encrypted-sqlite", "EncryptedSession._defer_encrypted_compaction"),
    ),
    timeout_s=60.0,
    preload=(*PRELOAD, "openai.types.responses.response_function_tool_call"),
)
