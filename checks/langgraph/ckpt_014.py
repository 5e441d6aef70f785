"""ARIB-CKPT-014: a checkpoint of the format before v4, written by an older release that kept
its pending sends as its parent's ``__pregel_tasks`` writes, reads back with those sends, in
order, and a v4 checkpoint gains none.

Before checkpoint format v4 (langgraph before 0.3), a checkpoint's pending sends (the Send
packets a step scheduled) were its parent's pending writes to the TASKS channel; the Postgres
savers stored the checkpoint without them (``"pending_sends": []``) and filled them in from the
parent's writes on every read. Since v4 they are the checkpoint's own ``__pregel_tasks``
channel value, and the Postgres savers migrate an older checkpoint on read (langgraph's own
``_migrate_checkpoint`` moves a ``pending_sends`` field there). A database written by an older
release and opened by a newer one must give a resumed run the sends it had: lost sends are
branches of the graph that silently never run.

On a saver that keeps that layout (``SENDS_IN_PARENT_WRITES``), a thread gets: a v1 parent
with TASKS writes of two tasks (and a write to another channel), a v1 child (its sends: the
parent's TASKS writes in (task_id, idx) order), a v1 child of a parent with no TASKS writes,
and a v4 child of the parent (which gains no sends). Read by id, as the latest and as listed,
each checkpoint, after langgraph's own migration of a ``pending_sends`` field, must hold the
sends it had in ``channel_values['__pregel_tasks']`` with a channel version, and nothing else
new. Elsewhere the check abstains, naming why.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from arib.checks.base import CheckSpec, Selector, TrialContext
from arib.checks.common import trials_param
from arib.checks.langgraph._contract import Problems, guarded, named
from arib.checks.langgraph._saver import (
    call,
    channel_argument,
    checkpoint_id,
    config,
    listing,
    saver_of,
)
from arib.ground.model import Trial
from arib.targets.base import NotApplicable

TASKS = "__pregel_tasks"
# Savers whose stores kept a checkpoint's pending sends as its parent's TASKS writes before
# format v4, and which outlive the process (an older release's store can reach a newer one).
SENDS_IN_PARENT_WRITES: Mapping[str, str] = {
    "PostgresSaver": "langgraph-checkpoint-postgres stored a checkpoint with pending_sends [] "
                     "and read its sends from the parent's TASKS writes (before format v4)",
    "AsyncPostgresSaver": "as PostgresSaver",
    "ReferenceSaver": "our reference keeps the Postgres savers' layout, to be judged with them",
}


def migrated(checkpoint: Mapping[str, Any]) -> dict[str, Any]:
    """What langgraph's reader makes of a checkpoint: a format before v4 with a non-empty
    ``pending_sends`` has them moved into the TASKS channel (``Pregel._migrate_checkpoint``)."""
    cp = {**checkpoint, "channel_values": dict(checkpoint.get("channel_values") or {}),
          "channel_versions": dict(checkpoint.get("channel_versions") or {})}
    if cp.get("v", 0) < 4 and cp.get("pending_sends"):
        cp["channel_values"][TASKS] = cp.pop("pending_sends")
        cp["channel_versions"][TASKS] = max(cp["channel_versions"].values(), default=1)
    return cp


async def run_trial(ctx: TrialContext) -> Trial:
    return await guarded(ctx, lambda: _trial(ctx))


def _checkpoint(ctx: TrialContext, saver: Any, step: int, v: int,
                values: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    versions = {ch: saver.get_next_version(None, channel_argument(saver, value))
                for ch, value in values.items()}
    cp: dict[str, Any] = {
        "v": v, "id": checkpoint_id(ctx.seed, step), "ts": f"2024-07-01T00:00:0{step}+00:00",
        "channel_values": dict(values), "channel_versions": dict(versions),
        "versions_seen": {"__input__": {}}}
    if v < 4:
        cp["pending_sends"] = []  # as the Postgres savers stored it before v4
    return cp, versions


async def _trial(ctx: TrialContext) -> Trial:
    saver = saver_of(await ctx.open())
    layout = SENDS_IN_PARENT_WRITES.get(type(saver).__name__)
    if layout is None:
        raise NotApplicable(f"{type(saver).__name__} never kept a checkpoint's pending sends "
                            f"as its parent's TASKS writes in a store that outlives the process "
                            f"(those kept: {', '.join(sorted(SENDS_IN_PARENT_WRITES))})")
    thread = f"t-{ctx.seed:x}"
    sends = [{"node": "fan", "arg": [ctx.seed % 97, i]} for i in range(3)]
    parent, parent_versions = _checkpoint(ctx, saver, 0, 1, {"items": ["a", "b"], "n": 2})
    lone, lone_versions = _checkpoint(ctx, saver, 1, 1, {"items": ["c"]})
    puts: list[tuple[str, dict[str, Any], dict[str, Any], str | None, list[Any]]] = [
        ("v1 parent", parent, parent_versions, None, []),
        ("v1 root with no sends", lone, lone_versions, None, []),
    ]
    for label, step, v, of in (("v1 child", 2, 1, parent), ("v4 child", 3, 4, parent),
                               ("v1 child of a parent without sends", 4, 1, lone)):
        cp, versions = _checkpoint(ctx, saver, step, v, {"items": [label], "n": step})
        want = sends if (v < 4 and of is parent) else []
        puts.append((label, cp, versions, of["id"], want))
    for label, cp, versions, parent_id, _ in puts:
        ctx.log(f"put {label} {cp['id']} (format v{cp['v']}) parent {parent_id}")
        await call(saver, "put", config(thread, "", parent_id), cp, {"step": cp["v"]}, versions)
        if cp is parent:
            # two tasks' sends, put task-b first; one task also writes another channel
            for task, writes in (("task-b", [(TASKS, sends[2])]),
                                 ("task-a", [(TASKS, sends[0]), ("items", ["x"]),
                                             (TASKS, sends[1])])):
                ctx.log(f"put_writes {task} on the v1 parent {cp['id']}: {writes!r}")
                await call(saver, "put_writes", config(thread, "", cp["id"]), writes, task)
    problems = Problems()
    by_id = {cp["id"]: (label, cp, want) for label, cp, _, _, want in puts}
    listed = {t.checkpoint["id"]: t for t in await listing(saver, config(thread, ""))}
    latest = await call(saver, "get_tuple", config(thread))
    for cid, (label, put, want) in by_id.items():
        got = await call(saver, "get_tuple", config(thread, "", cid))
        reads = [("get_tuple", got), ("list", listed.get(cid))]
        if latest is not None and latest.checkpoint["id"] == cid:
            reads.append(("latest", latest))
        for how, item in reads:
            if item is None:
                problems.add("lost", f"{how}: {label} {cid} not found")
                continue
            seen = migrated(item.checkpoint)
            values = seen["channel_values"]
            problems.expect(f"{how}: sends of the {label} {cid} (channel {TASKS})", want,
                            values.get(TASKS, []), kind="lost" if want else "foreign")
            if want and TASKS not in seen["channel_versions"]:
                problems.add("wrong", f"{how}: the {label} {cid} has sends but no version of "
                                      f"{TASKS}")
            problems.expect(f"{how}: other values of the {label} {cid}",
                            put["channel_values"],
                            {k: v for k, v in values.items() if k != TASKS})
            problems.expect(f"{how}: config of the {label}", (thread, "", cid),
                            named(item.config))
    return problems.trial(ctx, "sends_kept")


CHECK = CheckSpec(
    id="ARIB-CKPT-014",
    invariant="a checkpoint of the format before v4 reads back with the pending sends its "
              "parent's TASKS writes held, in order, and a v4 checkpoint gains none",
    fault="v1 checkpoints as an older release stored them (pending_sends []), the sends as "
          "the parent's TASKS writes of two tasks; a v4 sibling and a v1 child of a parent "
          "without sends",
    params=(trials_param(1),),
    run_trial=run_trial,
    mutants=("lg_api_reference_sends_not_migrated", "lg_api_async_postgres_sends_of_v4"),
    generated=(
        Selector("lg-postgres", "PostgresSaver.get_tuple", "flip_comparison"),
        Selector("lg-async-postgres", "AsyncPostgresSaver.alist", "flip_comparison"),
    ),
    timeout_s=30.0,
)
