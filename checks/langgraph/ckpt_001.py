"""ARIB-CKPT-001: a checkpoint put is the checkpoint got, exactly: channel values, versions,
versions seen and metadata, by id and as the latest, through another instance where one can
open the store."""

from __future__ import annotations

from arib.checks.base import CheckSpec, Param, Selector, TrialContext, describe
from arib.checks.common import trials_param
from arib.checks.langgraph._contract import guarded, reader_of
from arib.checks.langgraph._saver import (
    call,
    config,
    first_mismatch,
    make_checkpoint,
    saver_of,
    state_of,
)
from arib.ground.model import Counts, Trial
from arib.targets.langgraph.lanes import latest_only

# Values a serializer could bend: non-ASCII, nesting, large, empty, numbers and bytes.
SAMPLES = ("žluťoučký kůň 🐎", {"nested": [1, 2.5, None, True, {"k": "v"}]}, "x" * 20_000,
           "", 2**53, b"\x00\x01bytes")


async def run_trial(ctx: TrialContext) -> Trial:
    # guarded: a saver whose setup() fails, on a fresh store or on reopening one, is a violation
    return await guarded(ctx, lambda: _trial(ctx))


async def _trial(ctx: TrialContext) -> Trial:
    steps = ctx.params["steps"]
    handle = await ctx.open()
    saver = saver_of(handle)
    thread = f"t-{ctx.seed:x}"
    put: list[dict[str, object]] = []
    previous: dict[str, object] | None = None
    parent: str | None = None
    for step in range(steps):
        values = {"messages": [SAMPLES[(step + i) % len(SAMPLES)] for i in range(3)],
                  f"ch{step % 3}": SAMPLES[step % len(SAMPLES)]}
        cp, versions = make_checkpoint(saver, ctx.seed, step, values, previous,
                                       history=False)  # reads only the latest there
        metadata = {"source": "loop", "step": step, "note": SAMPLES[step % 2],
                    "tags": ["a", step]}
        ctx.log(f"put step {step} id {cp['id']} (parent {parent})")
        try:
            await call(saver, "put", config(thread, "", parent), cp, metadata, versions)
        except Exception as exc:  # noqa: BLE001 - a refused put is evidence
            return Trial(ctx.index, ctx.seed, True, Counts(raised=1), mode="put_raised",
                         sample=describe(exc), ops=tuple(ctx.ops))
        put.append({"id": cp["id"], "channel_values": dict(cp["channel_values"]),
                    "channel_versions": cp["channel_versions"],
                    "versions_seen": cp["versions_seen"], "metadata": metadata})
        previous, parent = cp, cp["id"]
    reader = await reader_of(ctx, handle)
    no_history = latest_only(saver)
    by_id = put[-1:] if no_history else put
    ctx.log("get_tuple of the latest id only: " + no_history if no_history else
            "get_tuple of every id")
    ctx.log("get_tuple of the thread (the latest)")
    lost = 0
    problems: list[str] = []
    try:
        for expected in by_id:
            got = await call(reader, "get_tuple", config(thread, "", str(expected["id"])))
            if got is None:
                lost += 1
                problems.append(f"{expected['id']} not found")
                continue
            wrong = first_mismatch(expected, without_config_echo(state_of(got), thread))
            if wrong:
                problems.append(f"{expected['id']}: {wrong}")
        latest = await call(reader, "get_tuple", config(thread))
    except Exception as exc:  # noqa: BLE001 - a read that raises shows nothing written
        return Trial(ctx.index, ctx.seed, True, Counts(lost=len(put), raised=1),
                     mode="read_raised", sample=describe(exc), ops=tuple(ctx.ops))
    if latest is None or latest.checkpoint["id"] != put[-1]["id"]:
        problems.append(f"latest is {None if latest is None else latest.checkpoint['id']}, "
                        f"not {put[-1]['id']}")
    counts = Counts(lost=lost, foreign=len(problems) - lost)
    return Trial(ctx.index, ctx.seed, bool(problems), counts,
                 mode="altered" if problems else "exact",
                 sample="; ".join(problems[:2]) or None, ops=tuple(ctx.ops))


def without_config_echo(state: dict[str, object], thread: str) -> dict[str, object]:
    """``state`` without the metadata keys a saver copies from the put's config: releases
    before langgraph-checkpoint 2.1 copy ``thread_id`` and ``checkpoint_ns`` into the metadata
    (their documented merge of config values, get_checkpoint_metadata); only those two, and
    only with the config's own values, are not counted as foreign."""
    meta = dict(state["metadata"])  # type: ignore[call-overload]
    for key, value in (("thread_id", thread), ("checkpoint_ns", "")):
        if meta.get(key) == value:
            del meta[key]
    return {**state, "metadata": meta}


CHECK = CheckSpec(
    id="ARIB-CKPT-001",
    invariant="a checkpoint put is the checkpoint got: values, versions, versions seen and "
              "metadata, by id and as the thread's latest",
    fault="none beyond the round trip: non-ASCII, nested, large, empty and bytes values",
    params=(Param("steps", 6, 1, 100, "checkpoints put on one thread"), trials_param(2)),
    run_trial=run_trial,
    mutants=("lg_reference_drops_metadata", "lg_sqlite_latest_is_oldest",
             "lg_reference_reopen_raises", "lg_reference_setup_fails"),
    generated=(Selector("lg-sqlite-file", "SqliteSaver.get_tuple", "flip_comparison"),),
    timeout_s=30.0,
)
