"""ARIB-REPLAY-001: a redelivered batch is visible exactly once."""

from __future__ import annotations

import copy

from arib.checks.base import CheckSpec, ParityFault, Selector, TrialContext, describe
from arib.checks.common import first_differences, read_items, tally, trials_param
from arib.ground.model import Counts, Trial


def model_batch(tag: str) -> list[dict[str, object]]:
    """A model-output batch as a runner persists it: items carry their own ids."""
    return [
        {"id": f"msg_{tag}_a", "type": "message", "role": "assistant", "status": "completed",
         "content": [{"type": "output_text", "text": f"looking that up ({tag})",
                      "annotations": []}]},
        {"id": f"fc_{tag}", "type": "function_call", "call_id": f"call_{tag}",
         "name": "lookup", "arguments": "{\"q\": \"weather\"}", "status": "completed"},
    ]


async def run_trial(ctx: TrialContext) -> Trial:
    """One trial: a batch with ids delivered twice, two equal messages; the read is tallied."""
    handle = await ctx.open()
    session = handle.session
    tag = f"{ctx.seed:016x}"
    batch = model_batch(tag)
    repeat = {"role": "user", "content": "ok"}
    ctx.log("add_items(batch); add_items(batch)  # redelivery of the same batch")
    ctx.log("add_items([user 'ok']); add_items([user 'ok'])  # two real, equal messages")
    errors = []
    for items in (batch, copy.deepcopy(batch), [repeat], [dict(repeat)]):
        try:
            await session.add_items(items)
        except Exception as exc:  # noqa: BLE001 - a refused delivery is evidence
            errors.append(describe(exc))
    expected = [*batch, repeat, repeat]
    try:
        seen = await read_items(session)
    except Exception as exc:  # noqa: BLE001
        return Trial(ctx.index, ctx.seed, True, Counts(lost=len(expected), raised=1),
                     mode="read_raised", sample=describe(exc), ops=tuple(ctx.ops))
    counts = tally(expected, seen, raised=len(errors))
    if counts.duplicated:
        mode = "at_least_once"
    elif counts.lost:
        mode = "merged_or_lost"
    else:
        mode = "exactly_once"
    return Trial(ctx.index, ctx.seed, counts.total > 0, counts, mode=mode,
                 sample=("; ".join(errors) or first_differences(expected, seen) or None),
                 ops=tuple(ctx.ops))


CHECK = CheckSpec(
    id="ARIB-REPLAY-001",
    invariant="a redelivered batch is visible exactly once, and separate deliveries of equal "
    "content are all kept",
    fault="the same model-output batch (items with ids) delivered twice, plus two equal "
    "user messages without ids",
    params=(trials_param(3),),
    run_trial=run_trial,
    mutants=("reference_no_idempotency", "reference_content_dedup", "reference_corrupts_content"),
    generated=(
        Selector("reference", "ReferenceSession.add_items", "early_return"),
        Selector("reference", "ReferenceSession.get_items", "flip_comparison"),
    ),
    timeout_s=60.0,
    parity=(
        ParityFault(
            "fault_redelivery", "fault:redelivery",
            "a batch of items with ids delivered twice: stored once or twice",
            "arib.checks.openai_agents.parity.faults:Redelivery",
        ),
    ),
)
