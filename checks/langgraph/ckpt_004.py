"""ARIB-CKPT-004: ``put_writes`` is idempotent per (task_id, idx), and special channels
overwrite.

On one checkpoint, a task's writes are put, put again unchanged (a retry), and put a third
time with other values at the same indexes: one write per (task, idx) must remain, the first.
Another task's writes on the same checkpoint stay its own. Each special channel the installed
``WRITES_IDX_MAP`` names (error, scheduled, interrupt, resume) is put alone twice for one task
with two values: one write of it must remain, the last. On a saver that keeps only a thread's
latest checkpoint (the Shallow savers), the writes go to that one checkpoint.
"""

from __future__ import annotations

from collections import Counter

from arib.checks.base import CheckSpec, Param, Selector, TrialContext
from arib.checks.common import trials_param
from arib.checks.langgraph._contract import Problems, guarded, put_chain
from arib.checks.langgraph._saver import call, config, special_indexes, writes_of
from arib.ground.model import Trial
from arib.targets.langgraph.lanes import latest_only


def special_channels() -> tuple[str, ...]:
    """The special channels of the installed langgraph-checkpoint, by their fixed index; none
    where the release defines no WRITES_IDX_MAP (1.0.1: every write keeps its own index)."""
    specials = special_indexes()
    return tuple(sorted(specials, key=lambda ch: -specials[ch]))


async def run_trial(ctx: TrialContext) -> Trial:
    return await guarded(ctx, lambda: _trial(ctx))


async def _trial(ctx: TrialContext) -> Trial:
    width = ctx.params["writes"]
    saver = (await ctx.open()).session
    thread = f"t-{ctx.seed:x}"
    # a saver that keeps only a thread's latest checkpoint gets one: its writes are the ones
    # a graph resumes from there
    no_history = latest_only(saver)
    if no_history:
        ctx.log(f"one checkpoint: {no_history}")
    chain = await put_chain(ctx, saver, thread, "", 1 if no_history else 2,
                            history=not no_history)
    target = config(thread, "", chain[0].id)
    first = [(f"ch{i}", f"first-{ctx.seed:x}-{i}") for i in range(width)]
    other = [(f"ch{i}", f"retry-{ctx.seed:x}-{i}") for i in range(width)]
    for label, writes in (("first", first), ("same again", first), ("other values", other)):
        ctx.log(f"put_writes task-a on {chain[0].id} ({label}): {writes!r}")
        await call(saver, "put_writes", target, writes, "task-a")
    ctx.log(f"put_writes task-b on {chain[0].id}: [('ch0', 'b')]")
    await call(saver, "put_writes", target, [("ch0", "b")], "task-b")
    specials = special_channels()
    for value in ("special-1", "special-2"):
        for channel in specials:
            ctx.log(f"put_writes task-s on {chain[0].id}: [({channel!r}, {value!r})]")
            await call(saver, "put_writes", target, [(channel, value)], "task-s")
    ctx.log(f"get_tuple {chain[0].id}")
    got = await call(saver, "get_tuple", target)
    problems = Problems()
    if got is None:
        problems.add("lost", f"{chain[0].id} not found")
        return problems.trial(ctx, "idempotent")
    seen = writes_of(got)
    tally = Counter((task, channel) for task, channel, _ in seen)
    for key, n in sorted(tally.items()):
        if n > 1:
            problems.add("duplicated", f"{key[0]} wrote {key[1]!r} once per index, {n} came back")
    values = {(task, channel): value for task, channel, value in seen}
    want = {**{("task-a", ch): v for ch, v in first}, ("task-b", "ch0"): "b",
            **{("task-s", ch): "special-2" for ch in specials}}
    for key, value in want.items():
        if key not in values:
            problems.add("lost", f"{key[0]}'s write of {key[1]!r} is gone")
        else:
            problems.expect(f"{key[0]}'s write of {key[1]!r}", value, values[key])
    for key in sorted(set(values) - set(want)):
        problems.add("foreign", f"{key[0]} has a write of {key[1]!r} that was never put")
    return problems.trial(ctx, "idempotent")


CHECK = CheckSpec(
    id="ARIB-CKPT-004",
    invariant="put_writes is idempotent per (task_id, idx): a repeat keeps the first write; "
              "a special channel (error, scheduled, interrupt, resume) keeps the last",
    fault="the same writes put again (a retry), other values at the same indexes, and each "
          "special channel put twice",
    params=(Param("writes", 3, 1, 50, "writes of the repeated task"), trials_param(2)),
    run_trial=run_trial,
    mutants=("lg_reference_special_writes_kept_first", "lg_contract_sqlite_special_kept_first"),
    generated=(
        Selector("lg-memory", "InMemorySaver.put_writes", "flip_comparison"),
        Selector("lg-sqlite-file", "SqliteSaver.put_writes", "flip_comparison"),
        Selector("lg-async-sqlite-file", "AsyncSqliteSaver.aput_writes", "flip_comparison"),
    ),
    timeout_s=30.0,
)
