"""ARIB-CKPT-005: pending writes belong to their checkpoint and come back in the order a
superstep applies them: (task_path, task_id, idx) where the release defines
``writes_sort_key``, (task_id, idx) before it.

Two checkpoints in the root namespace, and checkpoints with the same ids in a child
namespace and on another thread, each get writes from several tasks, put in a seeded
shuffled order (one task also writes the error channel, whose index is negative where the
release defines special channels: WRITES_IDX_MAP). All
checkpoints are put before any write. Reading through a second instance where the store
allows one, every checkpoint, by id, as the latest and as listed, must carry exactly its own
writes, in that order. Where the release orders by task path (langgraph-checkpoint 4.3+:
``get_tuple``'s pending writes "must be in writes_sort_key order", which DeltaChannel
histories replay), the tasks' paths order them neither by task id nor against it (odd tasks
first), so that an order by (task_id, idx) alone, either way, shows; before it, every write
has the same task_path. On a saver that keeps only a thread's latest checkpoint (the Shallow
savers), each scope gets one checkpoint and its writes.
"""

from __future__ import annotations

from typing import Any

from arib.checks.base import CheckSpec, Param, Selector, TrialContext
from arib.checks.common import trials_param
from arib.checks.langgraph._contract import Problems, Put, guarded, put_chain, reader_of
from arib.checks.langgraph._halves import task_paths
from arib.checks.langgraph._saver import call, config, listing, special_indexes, writes_of
from arib.ground.model import Trial
from arib.targets.langgraph.lanes import latest_only

ERROR = "__error__"


async def run_trial(ctx: TrialContext) -> Trial:
    return await guarded(ctx, lambda: _trial(ctx))


async def _trial(ctx: TrialContext) -> Trial:
    tasks, width = ctx.params["tasks"], 3
    handle = await ctx.open()
    saver = handle.session
    thread, other = f"t-{ctx.seed:x}", f"u-{ctx.seed:x}"
    # A saver that keeps only a thread's latest checkpoint gets one per scope: its writes
    # are what such a saver keeps, and what a graph resumes from.
    no_history = latest_only(saver)
    if no_history:
        ctx.log(f"one checkpoint per scope: {no_history}")
    scopes: list[Put] = []
    for where in ((thread, ""), (thread, "child|1"), (other, "")):
        scopes += await put_chain(ctx, saver, *where, 1 if no_history else 2,
                                  history=not no_history)
    paths = task_paths()
    specials = special_indexes()  # the error channel's fixed index (none on checkpoint 1.0.1)
    want: dict[tuple[str, str, str], list[tuple[str, str, Any]]] = {}
    plan: list[tuple[Put, str, str, list[tuple[str, Any]]]] = []
    for put in scopes:
        rows: list[tuple[str, str, int, str, Any]] = []
        for t in range(tasks):
            task = f"task-{t:02d}"
            # paths that order the tasks neither by task id nor against it: odd tasks first
            path = f"~__pregel_pull, node-{1 - t % 2}" if paths else ""
            writes = [(f"ch{i}", f"{put.thread}|{put.ns}|{put.id}|{task}|{i}")
                      for i in range(width)]
            if t == 1:
                writes.append((ERROR, f"error of {task} on {put.id}"))
            plan.append((put, task, path, writes))
            rows += [(path, task, specials.get(ch, i), ch, v)
                     for i, (ch, v) in enumerate(writes)]
        rows.sort(key=lambda r: (r[0], r[1], r[2]))
        want[(put.thread, put.ns, put.id)] = [(task, ch, v) for _, task, _, ch, v in rows]
    ctx.rng.shuffle(plan)
    for put, task, path, writes in plan:
        ctx.log(f"put_writes {task} (path {path!r}) on ({put.thread!r}, {put.ns!r}, {put.id}): "
                f"{len(writes)}")
        args = (writes, task, path) if paths else (writes, task)
        await call(saver, "put_writes", config(put.thread, put.ns, put.id), *args)
    reader = await reader_of(ctx, handle)
    problems = Problems()

    def judge(where: str, key: tuple[str, str, str], got: Any) -> None:
        if got is None:
            problems.add("lost", f"{where}: checkpoint {key} not found")
            return
        if key not in want:
            problems.add("foreign", f"{where}: checkpoint {key} was never put there")
            return
        seen = writes_of(got)
        expected = want[key]
        if sorted(seen, key=repr) != sorted(expected, key=repr):
            missing = [w for w in expected if w not in seen]
            extra = [w for w in seen if w not in expected]
            kind = "foreign" if extra else "lost"
            problems.add(kind, f"{where}: writes of {key[2]} in ({key[0]!r}, {key[1]!r}): "
                               f"missing {missing[:2]!r:.160}, not its own {extra[:2]!r:.160}")
        else:
            problems.expect(f"{where}: order of the writes (task, channel) of {key}",
                            [w[:2] for w in expected], [w[:2] for w in seen])

    for put in scopes:
        key = (put.thread, put.ns, put.id)
        ctx.log(f"get_tuple {key}")
        judge("get_tuple", key, await call(reader, "get_tuple", config(*key)))
    for where in ((thread, ""), (thread, "child|1"), (other, "")):
        ctx.log(f"get_tuple latest of {where}, then list it")
        latest = [p for p in scopes if (p.thread, p.ns) == where][-1]
        judge("latest", (*where, latest.id), await call(reader, "get_tuple", config(*where)))
        for item in await listing(reader, config(*where)):
            judge("list", (*where, item.checkpoint["id"]), item)
    return problems.trial(ctx, "own_and_ordered")


CHECK = CheckSpec(
    id="ARIB-CKPT-005",
    invariant="pending writes belong to their checkpoint (thread, namespace and id) and come "
              "back ordered by (task_path, task_id, idx) (by (task_id, idx) before "
              "writes_sort_key)",
    fault="writes of several tasks put in a shuffled order to checkpoints that share ids "
          "across namespaces and threads, one with a special (negative index) channel",
    params=(Param("tasks", 4, 2, 40, "tasks writing to every checkpoint"), trials_param(2)),
    run_trial=run_trial,
    mutants=("lg_reference_writes_by_task_descending", "lg_contract_async_sqlite_writes_to_latest"),
    generated=(
        Selector("lg-memory", "InMemorySaver.aput_writes", "early_return"),
        Selector("lg-async-sqlite-file", "AsyncSqliteSaver.aput_writes", "early_return"),
        Selector("lg-async-sqlite-file", "AsyncSqliteSaver.aput_writes", "drop_commit"),
        # a second lane's, so that the check is judged where one lane's clean saver breaks it
        Selector("lg-sqlite-file", "SqliteSaver.cursor", "drop_commit"),
        # a setup() that loses task_path on a store that has it orders writes without it
        Selector("lg-sqlite-file", "SqliteSaver.setup", "flip_comparison"),
    ),
    timeout_s=30.0,
)
