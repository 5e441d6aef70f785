"""ARIB-CKPT-007: ``delete_thread`` removes every namespace of the thread, checkpoints and
writes, and nothing else.

The victim thread and bystanders (another thread, and threads whose ids extend the victim's)
each get chains in several namespaces, with pending writes. After ``delete_thread(victim)``,
read through a second instance where the store allows one: nothing of the victim is found, by
id, as the latest or listed; every bystander checkpoint and write is exactly as it was. Then
the victim's first checkpoint is put again, with its channel versions and other values: it
must come back alone, with the new values and no writes (none left behind by the delete). A
saver without ``delete_thread`` (older releases) abstains.
"""

from __future__ import annotations

from typing import Any

from arib.checks.base import CheckSpec, Param, Selector, TrialContext
from arib.checks.common import trials_param
from arib.checks.langgraph._contract import (
    Problems,
    Put,
    delete_or_abstain,
    guarded,
    ids_of,
    put_chain,
    reader_of,
    thread_config,
)
from arib.checks.langgraph._saver import (
    call,
    config,
    first_mismatch,
    listing,
    state_of,
    writes_of,
)
from arib.ground.model import Trial

NAMESPACES = ("", "sub", "sub|inner")


async def run_trial(ctx: TrialContext) -> Trial:
    return await guarded(ctx, lambda: _trial(ctx))


async def _trial(ctx: TrialContext) -> Trial:
    steps = ctx.params["steps"]
    handle = await ctx.open()
    saver = handle.session
    victim = f"t-{ctx.seed:x}"
    threads = (victim, f"u-{ctx.seed:x}", victim + "x", victim + "|1")
    puts: list[Put] = []
    for writer, thread in enumerate(threads):
        for ns in NAMESPACES:
            chain = await put_chain(ctx, saver, thread, ns, steps, writer=writer)
            for put in chain:
                writes = [("ch0", f"w|{thread}|{ns}|{put.id}"), ("ch1", put.id)]
                ctx.log(f"put_writes task-{writer} on ({thread!r}, {ns!r}, {put.id})")
                await call(saver, "put_writes", config(thread, ns, put.id), writes,
                           f"task-{writer}")
            puts += chain
    before: dict[tuple[str, str, str], Any] = {}
    for put in puts:
        if put.thread != victim:
            got = await call(saver, "get_tuple", config(put.thread, put.ns, put.id))
            before[(put.thread, put.ns, put.id)] = (state_of(got), writes_of(got))
    await delete_or_abstain(ctx, saver, victim)
    reader = await reader_of(ctx, handle)
    problems = Problems()
    for put in puts:
        ctx.log(f"get_tuple ({put.thread!r}, {put.ns!r}, {put.id})")
        got = await call(reader, "get_tuple", config(put.thread, put.ns, put.id))
        if put.thread == victim:
            if got is not None:
                problems.add("foreign", f"deleted ({put.ns!r}, {put.id}) still found")
            continue
        if got is None:
            problems.add("lost", f"bystander ({put.thread!r}, {put.ns!r}, {put.id}) deleted")
            continue
        state, writes = before[(put.thread, put.ns, put.id)]
        wrong = first_mismatch(state, state_of(got))
        if wrong or writes != writes_of(got):
            problems.add("lost", f"bystander ({put.thread!r}, {put.ns!r}, {put.id}) changed: "
                                 f"{wrong or 'its pending writes'}")
    for ns in NAMESPACES:
        ctx.log(f"get_tuple latest of ({victim!r}, {ns!r})")
        if await call(reader, "get_tuple", config(victim, ns)) is not None:
            problems.add("foreign", f"deleted thread still has a latest in ns {ns!r}")
    ctx.log(f"list the deleted thread {victim!r}, every namespace")
    left = await listing(reader, thread_config(victim))
    problems.expect("list of the deleted thread", [], ids_of(left), kind="foreign")
    again = next(p for p in puts if p.thread == victim and p.ns == "")
    # the same id and channel versions (as a run of the reused thread id makes with a saver
    # whose versions restart at 1), other values, none of them inline primitives
    values = {ch: {"again": [ch, ctx.seed]} for ch in again.checkpoint["channel_values"]}
    versions = dict(again.checkpoint["channel_versions"])
    ctx.log(f"put ({victim!r}, '', {again.id}) again: same versions {versions!r}, values "
            f"{values!r}")
    await call(saver, "put", config(victim, ""), {**again.checkpoint, "channel_values": values},
               {"again": 1}, versions)
    ctx.log(f"get_tuple ({victim!r}, '', {again.id}) after putting it again")
    fresh = await call(saver, "get_tuple", config(victim, "", again.id))
    if fresh is None:
        problems.add("lost", f"{again.id} put again after the delete is not found")
    elif fresh.checkpoint["channel_values"] != values:
        problems.add("foreign", f"{again.id} put again after the delete has the values "
                                f"{fresh.checkpoint['channel_values']!r:.160}, not the ones put "
                                f"(the deleted ones left behind)")
    elif writes_of(fresh):
        problems.add("foreign", f"{again.id} put again after the delete has the deleted "
                                f"writes {writes_of(fresh)[:2]!r:.160}")
    ctx.log(f"list the thread {victim!r} after putting one checkpoint again")
    problems.expect("list of the thread put again", [again.id],
                    ids_of(await listing(saver, thread_config(victim))), kind="foreign")
    return problems.trial(ctx, "deleted_exactly")


CHECK = CheckSpec(
    id="ARIB-CKPT-007",
    invariant="delete_thread removes every namespace of the thread, checkpoints and writes, "
              "and nothing else",
    fault="a thread with three namespaces and pending writes deleted beside bystanders "
          "whose thread ids extend its id; then its first checkpoint put again",
    params=(Param("steps", 2, 1, 30, "checkpoints per (thread, namespace)"), trials_param(2)),
    run_trial=run_trial,
    mutants=("lg_reference_delete_keeps_namespaces", "lg_contract_sqlite_delete_prefix_threads"),
    generated=(
        Selector("lg-memory", "InMemorySaver.delete_thread", "flip_comparison"),
        Selector("lg-memory", "InMemorySaver.adelete_thread", "early_return"),
        Selector("lg-async-sqlite-file", "AsyncSqliteSaver.adelete_thread", "early_return"),
        Selector("lg-async-sqlite-file", "AsyncSqliteSaver.adelete_thread", "drop_await"),
        Selector("lg-async-sqlite-file", "AsyncSqliteSaver.adelete_thread", "drop_commit"),
    ),
    timeout_s=40.0,
)
