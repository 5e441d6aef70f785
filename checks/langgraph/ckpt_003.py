"""ARIB-CKPT-003: parent chains are intact: each tuple's parent_config names the checkpoint
that was put before it (the one its put's config named), in its own thread and namespace.

A chain is put in the root namespace, then a fork from an early checkpoint (time travel: the
parent is not the latest), and a chain in a child namespace. Every tuple, by id and as listed,
must name its own config and its parent; and walking parent_config from the latest checkpoint
must give the chain that leads to it, back to a root that has no parent.
"""

from __future__ import annotations

from typing import Any

from arib.checks.base import CheckSpec, Param, Selector, TrialContext
from arib.checks.common import trials_param
from arib.checks.langgraph._contract import (
    Problems,
    Put,
    guarded,
    named,
    put_chain,
    put_one,
)
from arib.checks.langgraph._saver import call, config, listing
from arib.ground.model import Trial


async def run_trial(ctx: TrialContext) -> Trial:
    return await guarded(ctx, lambda: _trial(ctx))


def _want_parent(put: Put) -> tuple[str, str, str | None] | None:
    return None if put.parent is None else (put.thread, put.ns, put.parent)


def _check_tuple(problems: Problems, where: str, put: Put, got: Any) -> None:
    if got is None:
        problems.add("lost", f"{where}: {put.id} not found")
        return
    problems.expect(f"{where}: config of {put.id}", (put.thread, put.ns, put.id),
                    named(got.config))
    problems.expect(f"{where}: parent_config of {put.id}", _want_parent(put),
                    named(got.parent_config))


async def _trial(ctx: TrialContext) -> Trial:
    steps = ctx.params["steps"]
    saver = (await ctx.open()).session
    thread = f"t-{ctx.seed:x}"
    root = await put_chain(ctx, saver, thread, "", steps)
    fork_from = root[ctx.rng.randrange(0, len(root) - 1)]
    fork = [await put_one(ctx, saver, thread, "", steps, {"fork": True}, {"fork": 1},
                          fork_from)]
    fork.append(await put_one(ctx, saver, thread, "", steps + 1, {"fork": 2}, {"fork": 2},
                              fork[-1]))
    child = await put_chain(ctx, saver, thread, "child|1", 3, writer=1)
    every = root + fork + child
    problems = Problems()
    for put in every:
        ctx.log(f"get_tuple {put.ns!r} {put.id}")
        _check_tuple(problems, "get_tuple", put, await call(
            saver, "get_tuple", config(thread, put.ns, put.id)))
    for ns in ("", "child|1"):
        ctx.log(f"list thread {thread!r} ns {ns!r}")
        listed = {t.checkpoint["id"]: t for t in await listing(saver, config(thread, ns))}
        for put in (p for p in every if p.ns == ns):
            _check_tuple(problems, f"list ns {ns!r}", put, listed.get(put.id))
    by_id = {p.id: p for p in every}
    for ns, tip in (("", fork[-1]), ("child|1", child[-1])):
        want: list[str] = []
        at: Put | None = tip
        while at is not None:
            want.append(at.id)
            at = by_id.get(at.parent) if at.parent else None
        ctx.log(f"walk parent_config from the latest of ns {ns!r}")
        walked: list[str] = []
        cur = await call(saver, "get_tuple", config(thread, ns))
        while cur is not None and len(walked) <= len(every):
            walked.append(cur.checkpoint["id"])
            cur = None if cur.parent_config is None else await call(
                saver, "get_tuple", cur.parent_config)
        problems.expect(f"parent chain from the latest of ns {ns!r}", want, walked)
    return problems.trial(ctx, "chained")


CHECK = CheckSpec(
    id="ARIB-CKPT-003",
    invariant="parent chains are intact: each tuple's parent_config names the checkpoint put "
              "before it, and the chain from the latest leads back to the root",
    fault="none beyond the chain: a fork from an earlier checkpoint (time travel) and a chain "
          "in a child namespace",
    params=(Param("steps", 5, 2, 60, "checkpoints of the root chain"), trials_param(2)),
    run_trial=run_trial,
    mutants=("lg_reference_parent_is_latest", "lg_contract_async_sqlite_parent_dropped"),
    generated=(
        Selector("lg-memory", "InMemorySaver.aput", "early_return"),
        Selector("lg-sqlite-file", "SqliteSaver.get_tuple", "swap_order"),
        Selector("lg-async-sqlite-file", "AsyncSqliteSaver.aput", "early_return"),
        Selector("lg-async-sqlite-file", "AsyncSqliteSaver.aget_tuple", "swap_order"),
    ),
    timeout_s=30.0,
)
