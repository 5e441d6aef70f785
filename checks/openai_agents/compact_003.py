"""ARIB-COMPACT-003: a compaction never overwrites what another instance did meanwhile.

The compact request takes seconds in production, and the wrapper's own lock only orders the
calls made through the wrapper: another instance on the same store and session id (a second
worker serving the same conversation) keeps writing. Each trial (fresh store, seed):

1. X's stored conversation is seeded; an agent turn runs through the compaction wrapper (see
   arib.checks.openai_agents._compaction) with the whole history sent (even trials) or a seeded
   ``SessionSettings.limit`` window (odd trials), and a seeded ``compaction_mode``;
2. while the compact request is in flight, another instance of the store, as X, does one
   operation (by trial, in turn): appends a batch, pops the newest item, or clears the session;
3. judged: let ``after`` be the history once that operation is applied to the history the
   compaction read. The final history, through the Runner's session and through a fresh
   instance, must be ``after`` (the stale replacement refused), or, only if the replaced range
   is still intact in ``after``, ``after`` with that range replaced by the compact output.
   A popped item must be the newest one. Then the other instance and the Runner's session each
   append one item: both must succeed and land last, in that order (a refused replacement must
   not leave the store locked).

On a store private to one instance (``SQLiteSession(":memory:")``) the other writer is X
itself, called directly rather than through the wrapper, and the reads go through X.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from arib.checks.base import CheckSpec, NotApplicable, Selector, TrialContext, describe
from arib.checks.common import canonical, read_items, tally, trials_param
from arib.checks.openai_agents._compaction import (
    MODES,
    PRELOAD,
    TURN,
    CompactClient,
    Reads,
    agent_turn,
    compaction_class,
    compose,
    expectation,
    history,
    hung,
    is_encrypted,
    offers_suffix,
    pairs_param,
    raised_trial,
    same,
    turn_items,
    turn_model,
    view,
)
from arib.checks.openai_agents._stores import reader_of
from arib.ground.model import Counts, Trial

OPS = ("append", "pop", "clear")


def allowed_finals(after: Sequence[Any], stored: Sequence[Any], start: int | None,
                   output: Sequence[Any]) -> list[list[Any]]:
    """``after``, plus ``after`` with ``stored[start:]`` replaced where that range is intact."""
    finals = [list(after)]
    if start is not None and output:
        replaced = stored[start:]
        if same(after[start:start + len(replaced)], replaced):
            finals.append([*after[:start], *output, *after[start + len(replaced):]])
    return finals


async def run_trial(ctx: TrialContext) -> Trial:
    """One trial: another instance writes during the compact request; its write must survive.

    Long (over 80 lines) on purpose: the trial is one scenario read top to bottom, and its
    concurrent tasks are closures over the trial's state; split up, that state would be
    threaded through every helper.
    """
    compaction_class()
    tag = f"{ctx.seed:016x}"[:10]
    handle = await ctx.open()
    store = view(handle.session)
    mine = history(tag, ctx.rng.randint(2, ctx.params["pairs"]), ctx.rng.random() < 0.3)
    limit = None if ctx.index % 2 == 0 else ctx.rng.randrange(0, len(mine))
    mode = ctx.rng.choice(MODES)
    outside = is_encrypted(store) and ctx.rng.random() < 0.5
    op = OPS[(ctx.index // 2) % len(OPS)]
    try:
        ctx.log(f"X.add_items({len(mine)})")
        await store.add_items(mine)
        # A store private to one instance (SQLiteSession(":memory:")) has no other instance:
        # the other writer is then X itself, called directly instead of through the wrapper
        # (another task of the same agent), and every read goes through X.
        if handle.private_store:
            ctx.log(f"the other writer is X itself, bypassing the wrapper: "
                    f"{handle.private_store}")
        other = view(await reader_of(ctx, handle))
    except NotApplicable:
        raise  # no second instance can open this store: the check abstains
    except Exception as exc:  # noqa: BLE001 - a store that cannot be written shows nothing
        return raised_trial(ctx, "seeding the history", exc)
    text = f"{tag} new question"
    stored = mine + turn_items(tag, text)
    batch = [{"role": "user", "content": f"{tag} other instance {i}"}
             for i in range(ctx.rng.randint(1, 2))]
    reads = Reads()
    done: list[list[Any]] = []

    async def other_writes() -> None:
        ctx.log(f"  during the request: other instance {op}")
        try:
            if op == "append":
                await other.add_items(batch)
                done.append([*stored, *batch])
            elif op == "pop":
                popped = await other.pop_item()
                if popped is None or canonical(popped) != canonical(stored[-1]):
                    reads.note("wrong_pop", f"the other instance's pop returned "
                                            f"{popped!r:.80} instead of the newest item")
                done.append(stored[:-1])
            else:
                await other.clear_session()
                done.append([])
        except NotApplicable:
            raise  # no second instance can open this store: the check abstains
        except Exception as exc:  # noqa: BLE001 - an instance refused service is evidence
            reads.raised += 1
            reads.note("op_raised", f"the other instance's {op} raised {describe(exc)}")

    client = CompactClient(tag, during=other_writes)
    outer, _ = compose(store, client, mode, outside)
    ctx.log(f"Runner.run(turn) on compaction(mode={mode!r}), SessionSettings(limit={limit}), "
            f"stored {len(mine)} items; while the compact request is in flight another "
            f"instance of X does: {op}")
    raised = await agent_turn(outer, turn_model(tag), text, limit)
    hung(reads, raised)
    exp = expectation(stored, len(mine), limit, mode, offers_suffix(store))
    ctx.log(f"documented outcome without the other instance: {exp.describe()}; the turn "
            f"{'raised ' + describe(raised) if raised else 'returned'}")
    if not client.requests:
        # No request: the wrapper skipped (as documented where it must) and nothing raced.
        done.append(stored)
    if not done:
        return Trial(ctx.index, ctx.seed, True, Counts(raised=reads.raised), mode=reads.mode,
                     sample=reads.sample(), ops=tuple(ctx.ops))
    output = client.outputs[0] if client.outputs else []
    finals = allowed_finals(done[0], stored, exp.start if exp.applies else None, output)
    try:
        fresh = view(await reader_of(ctx, handle))
        ctx.log("fresh.get_items(); runner_session.get_items()")
        final = await read_items(fresh)
        mine_view = await read_items(outer)
    except NotApplicable:
        raise  # no second instance can open this store: the check abstains
    except Exception as exc:  # noqa: BLE001 - a store that cannot be read shows nothing
        return raised_trial(ctx, "reading the history after the race", exc)
    if not any(same(final, f) for f in finals):
        kind = {"append": "lost", "pop": "undone", "clear": "resurrected"}[op]
        reads.note(kind, f"after the other instance's {op} during the request, the history "
                         f"is {len(final)} items, where {' or '.join(str(len(f)) for f in finals)}"
                         f" were allowed (the stale replacement overwrote it)")
    if not same(mine_view, final):
        reads.note("divergent_view", "the Runner's session and a fresh instance read "
                                     "different histories")
    late = [{"role": "user", "content": f"{tag} late other"},
            {"role": "user", "content": f"{tag} late runner"}]
    for who, session, item in (("other", other, late[0]), ("runner_session", outer, late[1])):
        ctx.log(f"{who}.add_items([late])")
        try:
            await session.add_items([item])
        except Exception as exc:  # noqa: BLE001 - a store left locked refuses writes
            reads.raised += 1
            reads.note("store_left_locked", f"{who}.add_items() after the compaction raised "
                                            f"{describe(exc)}")
            late.remove(item)
    await reads.expect(ctx, "fresh", fresh, [*final, *late])
    best = finals[-1] if output and any(canonical(i) in {canonical(o) for o in output}
                                        for i in final) else finals[0]
    counts = tally(best, final, raised=reads.raised)
    applied = len(finals) > 1 and same(final, finals[-1])
    return reads.trial(ctx, counts, "skipped" if not client.requests else
                       "compacted" if applied else "refused")


CHECK = CheckSpec(
    id="ARIB-COMPACT-003",
    invariant="an agent turn's compaction never overwrites what another instance did to the "
    "same session while the compact request was in flight: an append stays, a pop or a clear "
    "is not undone, the stale replacement is refused or applied only to an intact range, and "
    "the store stays writable by every instance",
    fault=f"{TURN}, whole history or a seeded SessionSettings.limit window; while the "
    "compact request is in flight another instance of the same session appends a batch, pops "
    "or clears",
    params=(
        pairs_param(5),
        trials_param(12),
    ),
    run_trial=run_trial,
    mutants=("reference_compaction_unconditional_swap",
             "sqlite_compaction_swap_ignores_tail_change"),
    generated=(
        Selector("sqlite-file",
                 "SQLiteSession._get_compaction_snapshot.<locals>.replace_suffix.<locals>"
                 ".replace_sync", "drop_rollback"),
    ),
    timeout_s=60.0,
    preload=PRELOAD,
)
