"""ARIB-TOY-001: notes appended by concurrent tasks are all read back, none lost."""

from __future__ import annotations

import anyio

from arib.checks.base import Barrier, CheckSpec, Param, Selector, TrialContext, describe
from arib.checks.common import first_differences, read_items, tally, trials_param
from arib.ground.model import Counts, Trial


async def run_trial(ctx: TrialContext) -> Trial:
    writers = ctx.params["writers"]
    store = (await ctx.open()).session
    plan = [{"note": f"{ctx.seed:x}-{w}"} for w in range(writers)]
    ctx.log(f"{writers} tasks each append one note, released together")
    barrier = Barrier(writers)
    errors: list[str] = []

    async def writer(note: dict[str, str]) -> None:
        await barrier.wait()
        try:
            await store.add([note])
        except Exception as exc:  # noqa: BLE001 - a failed append is evidence
            errors.append(describe(exc))

    async with anyio.create_task_group() as tg:
        for note in plan:
            tg.start_soon(writer, note)
    ctx.log("read()")
    try:
        seen = await read_items(store)
    except Exception as exc:  # noqa: BLE001 - a read that raises shows nothing written
        return Trial(ctx.index, ctx.seed, True, Counts(lost=len(plan), errors=len(errors) + 1),
                     mode="read_raised", sample=f"read raised {describe(exc)}",
                     ops=tuple(ctx.ops))
    counts = tally(plan, seen, errors=len(errors))
    return Trial(ctx.index, ctx.seed, counts.total > 0, counts,
                 mode="lossy" if counts.total else "exact",
                 sample="; ".join(errors[:2]) or first_differences(plan, seen) or None,
                 ops=tuple(ctx.ops))

CHECK = CheckSpec(
    id="ARIB-TOY-001",
    invariant="N notes appended by concurrent tasks are N notes read back",
    fault="writers tasks append one note each, all released together",
    params=(Param("writers", 4, 2, 32, "concurrent writer tasks"), trials_param(2)),
    run_trial=run_trial,
    mutants=("toy_reference_lost_update", "toy_notes_lost_update"),
    generated=(Selector("notes-file", "NoteStore.add", "drop_lock"),),
    timeout_s=20.0,
)
