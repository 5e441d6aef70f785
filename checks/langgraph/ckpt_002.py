"""ARIB-CKPT-002: the latest checkpoint comes first, and ``list`` honours ``before``, ``limit``
and metadata ``filter``, newest first.

A thread gets a chain of checkpoints in its root namespace, interleaved with checkpoints in
another of its namespaces and on another thread (so that a filter that leaks shows), and
pending writes on every other one. Every
listing of (thread, namespace) is then compared, in order, with the one the put sequence
implies: all, the first ``limit``, those before a checkpoint, those whose metadata has every
filter pair, their combinations, and a config naming one checkpoint id; and each listed
tuple is the one get_tuple gives.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from arib.checks.base import CheckSpec, Param, Selector, TrialContext
from arib.checks.common import trials_param
from arib.checks.langgraph._contract import (
    Problems,
    Put,
    guarded,
    ids_of,
    put_one,
    same_as_got,
    thread_config,
)
from arib.checks.langgraph._saver import call, config, listing
from arib.ground.model import Trial


def _meta(step: int) -> dict[str, Any]:
    return {"source": "loop" if step % 2 else "input", "step": step, "parity": step % 3}


async def run_trial(ctx: TrialContext) -> Trial:
    return await guarded(ctx, lambda: _trial(ctx))


async def _trial(ctx: TrialContext) -> Trial:
    steps = ctx.params["steps"]
    saver = (await ctx.open()).session
    thread, other = f"t-{ctx.seed:x}", f"u-{ctx.seed:x}"
    problems = Problems()
    ctx.log(f"get_tuple and list of thread {thread!r} before any put (a fresh store)")
    problems.expect("get_tuple before any put", None,
                    await call(saver, "get_tuple", config(thread)))
    problems.expect("list before any put", [], ids_of(await listing(saver, config(thread))))
    main: list[Put] = []
    side: dict[tuple[str, str], Put] = {}
    for step in range(steps):
        main.append(await put_one(ctx, saver, thread, "", step, {"v": step}, _meta(step),
                                  main[-1] if main else None))
        for scope in ((thread, "inner"), (other, "")):
            side[scope] = await put_one(ctx, saver, *scope, step, {"v": -step}, _meta(step),
                                        side.get(scope), writer=1)
    for put in main[::2]:
        ctx.log(f"put_writes task-w on {put.id}: [('v', 'w{put.id}')]")
        await call(saver, "put_writes", config(thread, "", put.id), [("v", f"w{put.id}")],
                   "task-w")
    newest = list(reversed(main))
    ctx.log(f"get_tuple of thread {thread!r} (the latest)")
    latest = await call(saver, "get_tuple", config(thread))
    problems.expect("get_tuple of the thread (latest id)", newest[0].id,
                    None if latest is None else latest.checkpoint["id"])

    def only(pred: Callable[[Put], bool]) -> list[str]:
        return [p.id for p in newest if pred(p)]

    mid = newest[len(newest) // 2]
    cases: list[tuple[str, dict[str, Any], dict[str, Any], list[str]]] = [
        ("all", config(thread), {}, only(lambda p: True)),
        ("limit=1", config(thread), {"limit": 1}, only(lambda p: True)[:1]),
        ("limit=3", config(thread), {"limit": 3}, only(lambda p: True)[:3]),
        (f"before {mid.id}", config(thread), {"before": config(thread, "", mid.id)},
         only(lambda p: p.id < mid.id)),
        (f"before {mid.id}, limit=1", config(thread),
         {"before": config(thread, "", mid.id), "limit": 1}, only(lambda p: p.id < mid.id)[:1]),
        ("filter source=loop", config(thread), {"filter": {"source": "loop"}},
         only(lambda p: p.metadata["source"] == "loop")),
        ("filter source=input, parity=0", config(thread),
         {"filter": {"source": "input", "parity": 0}},
         only(lambda p: p.metadata["source"] == "input" and p.metadata["parity"] == 0)),
        ("filter step=1, limit=1", config(thread), {"filter": {"step": 1}, "limit": 1},
         only(lambda p: p.metadata["step"] == 1)[:1]),
        ("filter matching nothing", config(thread), {"filter": {"source": "nowhere"}}, []),
        (f"config naming {mid.id}", config(thread, "", mid.id), {}, [mid.id]),
    ]
    by_id: Mapping[str, Put] = {p.id: p for p in main}
    for label, cfg, kwargs, want in cases:
        ctx.log(f"list {label}: {cfg!r} {kwargs!r}")
        got = await listing(saver, cfg, **kwargs)
        if problems.expect(f"list {label} (ids, newest first)", want, ids_of(got)):
            for item in got:
                # every key put comes back (a release may add keys of the config to it)
                meta = dict(item.metadata or {})
                sent = by_id[item.checkpoint["id"]].metadata
                problems.expect(f"list {label}: metadata of {item.checkpoint['id']}", sent,
                                {key: meta[key] for key in sent if key in meta})
    for item in await listing(saver, config(thread)):
        await same_as_got(ctx, saver, problems, "list all", item)
    ctx.log(f"list thread {thread!r}, every namespace, limit=2")
    across = await listing(saver, thread_config(thread), limit=2)
    if len(across) > 2:
        problems.add("duplicated", f"list of the thread with limit=2 gave {len(across)} "
                                   f"checkpoints: {ids_of(across)}")
    return problems.trial(ctx, "ordered")


CHECK = CheckSpec(
    id="ARIB-CKPT-002",
    invariant="the latest checkpoint comes first, and list honours before, limit and metadata "
              "filters, newest first",
    fault="none beyond the listing: a chain interleaved with another namespace and thread, "
          "listed with every combination of before, limit, filter and a checkpoint id",
    params=(Param("steps", 6, 3, 60, "checkpoints put on the listed thread"), trials_param(2)),
    run_trial=run_trial,
    mutants=("lg_reference_list_ignores_before", "lg_contract_sqlite_limit_one_more"),
    generated=(
        Selector("lg-memory", "InMemorySaver.list", "flip_comparison"),
        Selector("lg-sqlite-file", "SqliteSaver.list", "swap_order"),
        Selector("lg-sqlite-file", "SqliteSaver.get_tuple", "swap_order"),
        Selector("lg-async-sqlite-file", "AsyncSqliteSaver.alist", "swap_order"),
        Selector("lg-async-sqlite-file", "AsyncSqliteSaver.alist", "flip_comparison"),
        Selector("lg-async-sqlite-file", "AsyncSqliteSaver.aget_tuple", "swap_order"),
        Selector("lg-async-sqlite-file", "AsyncSqliteSaver.aget_tuple", "drop_await"),
    ),
    timeout_s=30.0,
)
