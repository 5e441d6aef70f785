"""ARIB-COMPACT-002: a reader never sees a compaction half done.

While an agent turn appends its items and the wrapper compacts (see
arib.checks.openai_agents._compaction), readers on other instances of the same store keep reading
the session (full reads and seeded limit reads), as a dashboard, a second worker or a resumed run
would. Every read must be a state the history passes through when each step is atomic: the stored
history before the turn, after one of the turn's appends (its input, then its answer), or the final
history; and the final history (read by a fresh instance after the turn) must be the history after
the appends, or that history with a suffix replaced by the compact output. A history seen empty,
or with the replaced items gone and the output not yet there (a clear-then-add replacement),
is a torn read.

The readers are released with the turn and run until it returns (with a ceiling on reads);
each trial has a seeded history, ``SessionSettings.limit`` window and ``compaction_mode``.
On a store private to one instance (``SQLiteSession(":memory:")``) the readers are other
tasks reading X itself, directly rather than through the wrapper.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import anyio

from arib.checks.base import CheckSpec, NotApplicable, Param, Selector, TrialContext, describe
from arib.checks.common import canonical, label, read_items, trials_param
from arib.checks.openai_agents._compaction import (
    MODES,
    PRELOAD,
    TURN,
    CompactClient,
    Reads,
    agent_turn,
    compaction_class,
    compose,
    history,
    hung,
    is_encrypted,
    pairs_param,
    raised_trial,
    same,
    turn_items,
    turn_model,
    view,
)
from arib.checks.openai_agents._stores import reader_of
from arib.ground.model import Counts, Trial


def replaced_suffix(stored: Sequence[Any], final: Sequence[Any], output: Sequence[Any]) -> bool:
    """``final`` is ``stored`` with some non-empty suffix replaced by ``output``."""
    if not output or len(final) < len(output) or not same(final[len(final) - len(output):],
                                                        output):
        return False
    start = len(final) - len(output)
    return start < len(stored) and same(final[:start], stored[:start])


async def run_trial(ctx: TrialContext) -> Trial:
    """One trial: other instances read throughout a compacting turn; no read may be torn.

    Long (over 80 lines) on purpose: the trial is one scenario read top to bottom, and its
    concurrent tasks are closures over the trial's state; split up, that state would be
    threaded through every helper.
    """
    compaction_class()
    tag = f"{ctx.seed:016x}"[:10]
    handle = await ctx.open()
    store = view(handle.session)
    mine = history(tag, ctx.rng.randint(2, ctx.params["pairs"]), ctx.rng.random() < 0.3)
    limit = None if ctx.rng.random() < 0.6 else ctx.rng.randrange(0, len(mine))
    mode = ctx.rng.choice(MODES)
    outside = is_encrypted(store) and ctx.rng.random() < 0.5
    try:
        ctx.log(f"X.add_items({len(mine)})")
        await store.add_items(mine)
        readers = [view(await reader_of(ctx, handle)) for _ in range(ctx.params["readers"])]
    except NotApplicable:
        raise  # no second instance can open this store: the check abstains
    except Exception as exc:  # noqa: BLE001 - a store that cannot be written shows nothing
        return raised_trial(ctx, "seeding the history", exc)
    client = CompactClient(tag)
    outer, _ = compose(store, client, mode, outside)
    text = f"{tag} new question"
    stored = mine + turn_items(tag, text)
    seen: list[tuple[int | None, list[Any]]] = []
    reads = Reads()
    done = anyio.Event()
    raised: list[BaseException | None] = []

    async def turn() -> None:
        raised.append(await agent_turn(outer, turn_model(tag), text, limit))
        done.set()

    async def reader(who: int, session: Any) -> None:
        for n in range(ctx.params["reads"]):
            last = done.is_set()
            window = None if n % 3 else ctx.rng.randint(1, len(stored))
            try:
                seen.append((window, await read_items(session, window)))
            except Exception as exc:  # noqa: BLE001 - a read that raises shows nothing
                reads.raised += 1
                reads.note("read_raised", f"reader {who} get_items({window or ''}) raised "
                                          f"{describe(exc)}")
                return
            if last:
                return
            await anyio.sleep(0)

    ctx.log(f"Runner.run(turn) on compaction(mode={mode!r}), SessionSettings(limit={limit}), "
            f"stored {len(mine)} items; {len(readers)} readers on other instances read until "
            f"it returns (at most {ctx.params['reads']} reads each)")
    async with anyio.create_task_group() as tg:
        tg.start_soon(turn)
        for who, session in enumerate(readers):
            tg.start_soon(reader, who, session)
    ctx.log(f"the turn {'raised ' + describe(raised[0]) if raised[0] else 'returned'}; "
            f"{len(seen)} reads during it")
    hung(reads, raised[0])
    try:
        ctx.log("fresh.get_items()")
        final = await read_items(view(await reader_of(ctx, handle)))
    except NotApplicable:
        raise  # no second instance can open this store: the check abstains
    except Exception as exc:  # noqa: BLE001 - a store that cannot be read shows nothing
        return raised_trial(ctx, "reading the final history", exc)
    output = client.outputs[0] if client.outputs else []
    if not same(final, stored) and not replaced_suffix(stored, final, output):
        reads.note("wrong_final", f"the final history ({len(final)} items) is neither the "
                                  f"history after the turn's append nor it with a suffix "
                                  f"replaced by the compact output")
    # The turn appends its input and its answer (one batch each, or one): any prefix of them.
    states = [stored[:n] for n in range(len(mine), len(stored) + 1)] + [final]
    torn = 0
    for window, items in seen:
        if not any(same(items, s if window is None else s[-window:]) for s in states):
            torn += 1
            if torn == 1:
                got = ", ".join(label(i) for i in items[-3:]) or "nothing"
                reads.note("torn_read", f"a read of {'all' if window is None else window} "
                                        f"items saw {len(items)} items ending {got}: none of "
                                        f"the {len(states)} serial states")
    if torn > 1:
        reads.problems.append(f"{torn} torn reads of {len(seen)}")
    keys = {canonical(i) for s in states for i in s}
    foreign = sum(1 for _, items in seen for i in items if canonical(i) not in keys)
    counts = Counts(foreign=foreign, wrong_result=torn, raised=reads.raised)
    return reads.trial(ctx, counts, "unchanged" if same(final, stored) else "compacted")


CHECK = CheckSpec(
    id="ARIB-COMPACT-002",
    invariant="readers on other instances never see an agent turn's compaction half done: "
    "every read during the turn is the history before it, after one of its appends, or the "
    "final history, and the final history is the appended one with at most one suffix replaced by "
    "the compact output",
    fault=f"{TURN} with a seeded SessionSettings.limit window and compaction_mode, while "
    "readers on other instances of the store read it (full and limit reads) until it returns",
    params=(
        pairs_param(5),
        Param("readers", 3, 1, 16, "reader instances"),
        Param("reads", 300, 2, 5000, "at most this many reads per reader"),
        trials_param(8),
    ),
    run_trial=run_trial,
    mutants=("reference_compaction_swap_in_two_steps",
             "async_sqlite_compaction_swap_in_two_commits"),
    generated=(
        Selector("sqlite-file", "SQLiteSession._get_compaction_snapshot", "early_return"),
    ),
    timeout_s=60.0,
    preload=PRELOAD,
)
