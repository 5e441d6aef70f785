"""ARIB-WINDOW-001: get_items(limit=k) at every edge value is the newest k of this session.

Agent runtimes read the tail of a conversation with ``get_items(limit=k)`` (the Runner's
``session_settings.limit``, memory trimming, summarisers), with k computed from budgets: it
can be 0, negative, 1, land inside a multi-item batch (a turn with several tool calls), equal
the history's length or exceed it. The store is shared: other conversations (session ids)
write to the same tables or keys at the same time. Invariant, per read of session X whose
history is H (n items, in the order they were appended):

- k >= 1: exactly the newest ``min(k, n)`` items of H, oldest first (``H[-k:]``);
- k = None (no limit): all of H;
- k = 0: no items;
- k < 0: no items, all of H, or a loud refusal -- never any other window (the SDK backends
  differ here: SQLite reads a negative LIMIT as "no limit", Redis as "nothing", PostgreSQL
  refuses it; each is a defensible reading, a partial or foreign window is not);
- never an item of another session id, whatever that session does meanwhile;
- the same for a fresh instance of X as for the one that wrote.

The fault: X's history is built from seeded multi-item batches interleaved with a peer
session's (id ``X-peer``, same store), so the store's newest rows are often the peer's and
batches share a transaction (and on SQL backends a timestamp); then X reads at every edge
value while the peer keeps appending and reading its own windows concurrently.
"""

from __future__ import annotations

from typing import Any

import anyio

from arib.checks.base import CheckSpec, Param, Selector, TrialContext, describe
from arib.checks.common import canonical, label, read_items, trials_param
from arib.checks.openai_agents.iso_001 import PEER_SUFFIX, open_peer
from arib.ground.model import Counts, Trial
from arib.ground.shorten import join_within


def edge_limits(history_len: int, last_batch: int) -> list[int | None]:
    """Every edge value of k for a history of ``history_len`` whose newest batch has
    ``last_batch`` items (k inside that batch included), and None (no limit)."""
    n = history_len
    ks = [None, -5, -1, 0, 1, 2, last_batch - 1, last_batch + 1, n - 1, n, n + 1, n + 7]
    return list(dict.fromkeys(ks))


def window_problem(k: int | None, history: list[Any], got: list[Any] | None,
                   error: BaseException | None, foreign: set[str]) -> str | None:
    """Why ``got`` (or ``error``) is not a valid ``get_items(limit=k)`` of ``history``."""
    want = [canonical(i) for i in history]
    if error is not None:
        if k is not None and k < 0:
            return None  # a loud refusal of a negative limit is allowed
        return f"get_items(limit={k}) raised {describe(error)}"
    assert got is not None
    seen = [canonical(i) for i in got]
    strangers = [label(i) for i in got if canonical(i) in foreign]
    if strangers:
        return f"get_items(limit={k}) returned another session's items: {strangers[:3]}"
    if k is None:
        expected = want
    elif k > 0:
        expected = want[-k:]
    elif k == 0:
        expected = []
    else:
        if seen in ([], want):
            return None
        expected = want
    if seen != expected:
        return (f"get_items(limit={k}) returned {len(seen)} items "
                f"{[label(i) for i in got][:3]}...; expected the newest {len(expected)} of "
                f"{len(want)}" + (" (or none, or a refusal)" if k is not None and k < 0
                                  else ""))
    return None


async def run_trial(ctx: TrialContext) -> Trial:
    """One trial: X reads every limit edge while a peer keeps writing to the same store.

    Long (over 80 lines) on purpose: the trial is one scenario read top to bottom, and its
    concurrent tasks are closures over the trial's state; split up, that state would be
    threaded through every helper.
    """
    batches, peer_reads = ctx.params["batches"], ctx.params["peer_reads"]
    mine = await ctx.open()
    peer = await open_peer(ctx, ctx.build.session_id + PEER_SUFFIX)
    x, p = mine.session, peer.session
    tag = f"{ctx.seed:016x}"
    history: list[Any] = []
    peer_items: list[Any] = []
    serial = iter(range(10**6))

    def batch(owner: str) -> list[dict[str, str]]:
        size = ctx.rng.randint(1, 4)
        return [{"role": "user", "content": f"{tag}-{owner}-{next(serial)}"}
                for _ in range(size)]

    last = 0
    try:
        for _ in range(batches):
            mine_first = ctx.rng.random() < 0.5
            for owner in ("X", "peer") if mine_first else ("peer", "X"):
                items = batch(owner)
                ctx.log(f"{owner}: add_items({len(items)} items)")
                await (x if owner == "X" else p).add_items(items)
                (history if owner == "X" else peer_items).extend(items)
                if owner == "X":
                    last = len(items)
    except Exception as exc:  # noqa: BLE001 - a store that cannot be filled is evidence
        return Trial(ctx.index, ctx.seed, True, Counts(raised=1), mode="setup_failed",
                     sample=f"add_items raised {describe(exc)}", ops=tuple(ctx.ops))
    ks = edge_limits(len(history), last)
    ctx.rng.shuffle(ks)
    fresh = (await ctx.reopen(mine)).session
    foreign = {canonical(i) for i in peer_items}
    mine_keys = {canonical(i) for i in history}
    problems: list[str] = []
    raised = 0  # how many of the problems are calls that raised
    ctx.log(f"X (and a fresh instance of X) reads get_items(limit=k) for k in {ks} while the "
            f"peer appends and reads {peer_reads} windows of its own")

    async def read(session: Any, k: int | None) -> tuple[list[Any] | None,
                                                         BaseException | None]:
        try:
            return await read_items(session, k), None
        except Exception as exc:  # noqa: BLE001 - the exception is judged per k
            return None, exc

    async def peer_side() -> None:
        nonlocal raised
        for _ in range(peer_reads):
            more = batch("peer")
            try:
                await p.add_items(more)
                peer_items.extend(more)
                foreign.update(canonical(i) for i in more)
                k = ctx.rng.randint(1, 4)
                got, error = await read(p, k)
            except Exception as exc:  # noqa: BLE001 - the peer's failure is evidence too
                problems.append(f"peer add_items raised {describe(exc)}")
                raised += 1
                continue
            if error is not None or got is None:
                problems.append(f"peer get_items(limit={k}) raised {describe(error)}")
                raised += 1
            elif any(canonical(i) in mine_keys for i in got):
                problems.append(f"the peer's get_items(limit={k}) returned X's items")
            elif [canonical(i) for i in got] != [canonical(i) for i in peer_items[-k:]]:
                problems.append(f"the peer's get_items(limit={k}) is not its newest {k}")

    async def my_side() -> None:
        nonlocal raised
        for k in ks:
            for who, session in (("X", x), ("fresh X", fresh)):
                got, error = await read(session, k)
                problem = window_problem(k, history, got, error, foreign)
                if problem:
                    problems.append(f"{who}: {problem}")
                    raised += error is not None

    async with anyio.create_task_group() as tg:
        tg.start_soon(peer_side)
        tg.start_soon(my_side)
    mode = "exact"
    if problems:
        first = problems[0]
        mode = ("foreign" if "another session" in first or "X's items" in first else
                "raised" if "raised" in first else "wrong_window")
    return Trial(ctx.index, ctx.seed, bool(problems),
                 Counts(wrong_result=len(problems) - raised, raised=raised), mode=mode,
                 sample=join_within(problems[:2], 400) or None, ops=tuple(ctx.ops))


CHECK = CheckSpec(
    id="ARIB-WINDOW-001",
    invariant="get_items(limit=k) returns the newest k of this session's own items in order "
    "at every edge value (k = 1, inside a batch, n, beyond n), none for k = 0, and for k < 0 "
    "none, all or a loud refusal, never another session's items, while a peer session writes",
    fault="seeded multi-item batches of X interleaved with a peer session's (X-peer, same "
    "store), then limit reads at every edge value through X and a fresh instance of X while "
    "the peer appends and reads its own windows concurrently",
    params=(
        Param("batches", 4, 1, 50, "batches each session appends before the reads"),
        Param("peer_reads", 6, 0, 100, "append-and-read rounds of the peer during the reads"),
        trials_param(3),
    ),
    run_trial=run_trial,
    mutants=(
        "reference_limit_reads_every_session",
        "reference_limit_zero_means_no_limit",
        "postgres_limit_before_session_filter",
    ),
    generated=(
        Selector("reference", "ReferenceSession._window", "flip_comparison"),
        Selector("sqlalchemy-postgres", "SQLAlchemySession.get_items.*._latest_first_stmt",
                 "swap_order_method"),
        Selector("sqlalchemy-postgres", "SQLAlchemySession.get_items.*._latest_first_stmt",
                 "drop_session_where"),
    ),
    timeout_s=90.0,
)
