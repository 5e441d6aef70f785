"""ARIB-CKPT-013: ``delete_thread`` of a thread with nothing stored succeeds and changes nothing:
on a fresh store (the first call), for a thread never written, and for a thread already
deleted.

Deleting a conversation is an application's call, made whenever a user asks, whatever the
store holds: the first request a new deployment serves, a thread whose run never saved a
checkpoint, a retried delete. A saver that fails there ("no such table" on a store whose tables
are made lazily by the other operations, a KeyError on a thread it does not know) turns a
no-op into an error the application reports as a failed delete; one that deletes more than the
thread named loses other conversations.

On a fresh store, ``delete_thread`` is the first call; then a checkpoint put there reads back.
On a store holding threads T and U (chains with pending writes): ``delete_thread`` of a thread
never written leaves both exactly as they were; ``delete_thread(T)`` twice leaves no
checkpoint of T, and U exactly as it was. A saver whose release has no delete_thread (or
raises NotImplementedError) abstains.
"""

from __future__ import annotations

from typing import Any

from arib.checks.base import CheckSpec, Param, Selector, TrialContext
from arib.checks.common import trials_param
from arib.checks.langgraph._contract import (
    Problems,
    delete_or_abstain,
    guarded,
    ids_of,
    put_chain,
    put_one,
)
from arib.checks.langgraph._fresh import fresh_saver
from arib.checks.langgraph._halves import listing_view
from arib.checks.langgraph._saver import call, config, listing
from arib.ground.model import Trial
from arib.targets.langgraph.lanes import latest_only


async def run_trial(ctx: TrialContext) -> Trial:
    return await guarded(ctx, lambda: _trial(ctx))


async def _trial(ctx: TrialContext) -> Trial:
    steps = ctx.params["steps"]
    thread, other = f"t-{ctx.seed:x}", f"u-{ctx.seed:x}"
    problems = Problems()
    async with fresh_saver(ctx, "fresh") as fresh:
        await delete_or_abstain(ctx, fresh, thread, "the first call on a fresh store")
        put = await put_one(ctx, fresh, thread, "", 0, {"v": 0}, {"step": 0}, history=False)
        problems.expect("list after delete_thread as the first call, then a put", [put.id],
                        ids_of(await listing(fresh, config(thread, ""))), kind="lost")
    async with fresh_saver(ctx, "used") as saver:
        history = not latest_only(saver)
        for writer, name in enumerate((thread, other)):
            chain = await put_chain(ctx, saver, name, "", steps if history else 1,
                                    writer=writer, history=history)
            for item in chain:
                ctx.log(f"put_writes task-{writer} on ({name!r}, {item.id})")
                await call(saver, "put_writes", config(name, "", item.id),
                           [("v", f"w|{name}|{item.id}")], f"task-{writer}")
        await _deletes(ctx, saver, problems, thread, other)
    return problems.trial(ctx, "deleted_nothing_else")


async def _deletes(ctx: TrialContext, saver: Any, problems: Problems, thread: str,
                   other: str) -> None:
    before = {name: listing_view(await listing(saver, config(name, "")))
              for name in (thread, other)}
    await delete_or_abstain(ctx, saver, f"never-{ctx.seed:x}", "a thread never written")
    for name in (thread, other):
        problems.expect(f"{name!r} after deleting a thread never written", before[name],
                        listing_view(await listing(saver, config(name, ""))), kind="lost")
    for attempt in ("once", "again"):
        await delete_or_abstain(ctx, saver, thread, attempt)
        problems.expect(f"{thread!r} after delete_thread ({attempt})", [],
                        ids_of(await listing(saver, config(thread, ""))), kind="foreign")
        problems.expect(f"{other!r} after delete_thread of {thread!r} ({attempt})",
                        before[other], listing_view(await listing(saver, config(other, ""))),
                        kind="lost")


CHECK = CheckSpec(
    id="ARIB-CKPT-013",
    invariant="delete_thread of a thread with nothing stored (on a fresh store, never "
              "written, already deleted) succeeds and changes nothing else",
    fault="delete_thread as the first call on a fresh store, of a thread never written, and "
          "twice of one thread, beside a thread with checkpoints and writes",
    params=(Param("steps", 2, 1, 30, "checkpoints per thread"), trials_param(1)),
    run_trial=run_trial,
    mutants=("lg_api_reference_delete_unknown_raises",),
    generated=(Selector("lg-memory", "InMemorySaver.delete_thread", "flip_comparison"),),
    timeout_s=30.0,
)
