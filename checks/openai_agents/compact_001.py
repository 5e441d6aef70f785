"""ARIB-COMPACT-001: an automatic compaction replaces exactly the range it compacted.

An agent wraps the lane's store in ``OpenAIResponsesCompactionSession`` and runs one turn
through the Runner (scripted model, stand-in compact client: see
arib.checks.openai_agents._compaction). Each trial, on a fresh store with its seed:

1. a peer session id (``X-peer``) and the session ``X`` write interleaved: the peer's items
   sit before, between and after X's stored conversation (seeded length, sometimes opening
   with an assistant item);
2. the turn runs with the whole history sent (even trials) or a seeded
   ``SessionSettings.limit`` window (odd trials), and a seeded ``compaction_mode``; on an
   EncryptedSession lane, the encryption sits inside or outside the compaction wrapper
   (seeded);
3. while the compact request is in flight, one fault (by trial, in turn): none; the peer id
   appends; (lanes with a terminal close) the store is closed; the request fails;
4. judged: the request covers exactly the range the documentation says it replaces (or no
   request where it says the wrapper skips); then X reads, through the Runner's session, a
   fresh instance and a limit read (a seeded k >= 1: an empty window would judge nothing of
   the compaction), exactly ``prefix + output`` (a failed request or a closed
   store: the history unchanged); the peer reads exactly its own items; an append the backend
   refuses (an item JSON cannot encode) changes nothing, and an append after the compaction
   lands after the output.

On a store private to one instance (``SQLiteSession(":memory:")``) there is no peer and no
fresh instance: the same turn runs with the faults that need neither (none, a failed
request), and the reads go through X itself.
"""

from __future__ import annotations

from typing import Any

from arib.checks.base import CheckSpec, NotApplicable, Selector, TrialContext, describe
from arib.checks.common import read_items, tally, trials_param
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
    request_problem,
    turn_items,
    turn_model,
    view,
)
from arib.checks.openai_agents._stores import reader_of
from arib.checks.openai_agents.atom_001 import Unencodable
from arib.checks.openai_agents.iso_001 import PEER_SUFFIX, open_peer
from arib.ground.model import Counts, Trial

# Trial i runs fault CYCLE[(i // 2) % len] (lanes without a terminal close skip that one);
# even trials send the whole history, odd ones a seeded SessionSettings.limit window.
CYCLE = ("none", "peer_writes", "close_in_flight", "none", "compact_fails", "peer_writes")


def fault_of(ctx: TrialContext, private: bool = False) -> str:
    """This trial's fault (a close only where close() ends the session; on a store private
    to one instance, neither a peer nor a close, after which nothing could read it)."""
    claims = ctx.target.claims
    closable = claims.has_close and claims.close_is_terminal and not private
    cycle = [f for f in CYCLE if (closable or f != "close_in_flight")
             and not (private and f == "peer_writes")]
    return cycle[(ctx.index // 2) % len(cycle)]


async def seed_interleaved(ctx: TrialContext, store: Any, peer: Any | None, mine: list[Any],
                           theirs: list[Any]) -> None:
    """Write ``mine`` to X and ``theirs`` to the peer (if any), in alternating seeded chunks."""
    cuts = sorted(ctx.rng.sample(range(1, len(mine)), min(2, len(mine) - 1)))
    chunks = [mine[a:b] for a, b in zip([0, *cuts], [*cuts, len(mine)], strict=True)]
    per = max(1, len(theirs) // (len(chunks) + 1))
    rest = list(theirs)
    for chunk in chunks:
        head, rest = rest[:per], rest[per:]
        if peer is not None:
            ctx.log(f"peer.add_items({len(head)})")
            await peer.add_items(head)
        ctx.log(f"X.add_items({len(chunk)})")
        await store.add_items(chunk)
    if peer is not None:
        ctx.log(f"peer.add_items({len(rest)})")
        await peer.add_items(rest)


async def refused_append(ctx: TrialContext, session: Any, tag: str) -> None:
    """An append the backend refuses (one item JSON cannot encode), which must change nothing:
    a compaction left uncommitted would be rolled back with it. A backend that stores the
    value in a form it chose (EncryptedSession) acknowledges it: its two items are popped."""
    failing = [{"role": "user", "content": f"{tag} refused item"},
               {"role": "user", "content": Unencodable(tag)}]
    ctx.log("runner_session.add_items([item, item JSON cannot encode])")
    try:
        await session.add_items(failing)
    except Exception as exc:  # noqa: BLE001 - the refusal this step provokes
        ctx.log(f"  raised {describe(exc)}")
        return
    ctx.log("  acknowledged; runner_session.pop_item() x2")
    for _ in failing:
        await session.pop_item()


async def run_trial(ctx: TrialContext) -> Trial:
    """One trial: a compacting turn beside a peer's items, one fault in flight, then judged.

    Long (over 80 lines) on purpose: the trial is one scenario read top to bottom, and its
    concurrent tasks are closures over the trial's state; split up, that state would be
    threaded through every helper.
    """
    compaction_class()
    tag = f"{ctx.seed:016x}"[:10]
    handle = await ctx.open()
    store = view(handle.session)
    # A store private to this one instance (SQLiteSession(":memory:")) has no peer and no
    # fresh instance: the turn and its faults still run, and every read goes through X.
    private = handle.private_store
    if private:
        ctx.log(f"no peer, no fresh instance: {private}")
    peer = None if private else view(
        (await open_peer(ctx, ctx.build.session_id + PEER_SUFFIX)).session)
    mine = history(tag, ctx.rng.randint(2, ctx.params["pairs"]), ctx.rng.random() < 0.3)
    theirs = [] if private else [{"role": "user", "content": f"{tag} peer item {i}"}
                                 for i in range(4)]
    try:
        await seed_interleaved(ctx, store, peer, mine, theirs)
    except NotApplicable:
        raise  # no second instance can open this store: the check abstains
    except Exception as exc:  # noqa: BLE001 - a store that cannot be written shows nothing
        return raised_trial(ctx, "seeding the history", exc)

    limit = None if ctx.index % 2 == 0 else ctx.rng.randrange(0, len(mine))
    mode = ctx.rng.choice(MODES)
    outside = is_encrypted(store) and ctx.rng.random() < 0.5
    fault = fault_of(ctx, private is not None)
    client = CompactClient(tag)
    outer, _ = compose(store, client, mode, outside)
    if fault == "peer_writes":
        late_peer = {"role": "user", "content": f"{tag} peer item during the request"}

        async def peer_writes() -> None:
            ctx.log("  during the request: peer.add_items([item])")
            assert peer is not None  # fault_of draws no peer fault on a private store
            await peer.add_items([late_peer])
            theirs.append(late_peer)
        client.during = peer_writes
    elif fault == "compact_fails":
        client.fail = True
    elif fault == "close_in_flight":
        async def close_store() -> None:
            ctx.log("  during the request: X.close()")
            await ctx.close(handle.session)
        client.during = close_store

    text = f"{tag} new question"
    ctx.log(f"Runner.run(turn) on {'encrypted(compaction(store))' if outside else 'compaction'}"
            f"(mode={mode!r}), SessionSettings(limit={limit}), stored {len(mine)} items; "
            f"while the compact request is in flight: {fault}")
    raised = await agent_turn(outer, turn_model(tag), text, limit)
    stored = mine + turn_items(tag, text)
    exp = expectation(stored, len(mine), limit, mode, offers_suffix(store))
    ctx.log(f"documented outcome: {exp.describe()}; the turn "
            f"{'raised ' + describe(raised) if raised else 'returned'}")

    reads = Reads()
    hung(reads, raised)
    applied = exp.applies and fault in ("none", "peer_writes")
    if applied and raised is not None and not reads.kinds:
        reads.note("turn_raised", f"the turn raised {describe(raised)}")
    if exp.applies and len(client.requests) != 1:
        reads.note("not_compacted", f"{len(client.requests)} compact requests where the "
                                    f"documented outcome is to {exp.describe()}")
    elif not exp.applies and client.requests:
        reads.note("wrong_request", f"a compact request where the documented outcome is "
                                    f"to skip: {client.requests[0]}"[:300])
    elif exp.applies:
        wrong = request_problem(client.requests[0], exp, stored, f"resp_{tag}_1")
        if wrong:
            reads.note("wrong_request", wrong)
    expected = stored
    if applied and client.outputs:
        expected = stored[:exp.start] + client.outputs[0]

    try:
        fresh = view(await reader_of(ctx, handle))
    except NotApplicable:
        raise  # no second instance can open this store: the check abstains
    except Exception as exc:  # noqa: BLE001 - a store that cannot be reopened shows nothing
        return raised_trial(ctx, "reopening the store", exc)
    if fault != "close_in_flight":
        await reads.expect(ctx, "runner_session", outer, expected)
    await reads.expect(ctx, "fresh", fresh, expected)
    # A limit read of k >= 1: an empty window (k = 0) is the same whatever the compaction did,
    # so it would judge only the limit-0 edge, ARIB-LIMIT-001's and ARIB-WINDOW-001's to judge.
    await reads.expect(ctx, "fresh", fresh, expected, ctx.rng.randint(1, len(expected) + 1))
    if peer is not None:
        await reads.expect(ctx, "peer", peer, theirs)
    if fault != "close_in_flight":
        await refused_append(ctx, outer, tag)
        await reads.expect(ctx, "fresh", fresh, expected)
        late = {"role": "user", "content": f"{tag} after the compaction"}
        ctx.log("runner_session.add_items([late])")
        try:
            await outer.add_items([late])
            expected = [*expected, late]
        except Exception as exc:  # noqa: BLE001 - a write that raises is evidence
            reads.note("late_append_raised", describe(exc))
            reads.raised += 1
        await reads.expect(ctx, "fresh", fresh, expected)
    try:
        counts = tally(expected, await read_items(fresh), raised=reads.raised)
    except Exception:  # noqa: BLE001 - already counted as a read error above
        counts = Counts(raised=reads.raised + 1)
    return reads.trial(ctx, counts, "compacted" if applied else "unchanged")


CHECK = CheckSpec(
    id="ARIB-COMPACT-001",
    invariant="an agent turn's automatic compaction replaces exactly the range its compact "
    "request covered with the compact output: the older prefix, a peer session's items and "
    "later appends stay in place and in order, the same for the Runner's session, a fresh "
    "instance and limit reads; a failed compact request or a store closed while it is in "
    "flight leaves the history unchanged",
    fault=f"{TURN} on a history interleaved with a peer session's, with a seeded "
    "SessionSettings.limit window and compaction_mode; while the compact request is in "
    "flight: nothing, the peer appends, the request fails, or the store is closed",
    params=(
        pairs_param(5),
        trials_param(12),
    ),
    run_trial=run_trial,
    mutants=("reference_compaction_keeps_old_suffix", "reference_compaction_deletes_peer_rows",
             "sqlalchemy_compaction_swap_starts_late"),
    generated=(
        Selector("sqlite-file", "SQLiteSession._get_compaction_snapshot", "early_return"),
    ),
    timeout_s=60.0,
    preload=PRELOAD,
)
