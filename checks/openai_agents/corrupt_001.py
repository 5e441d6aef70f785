"""ARIB-CORRUPT-001: rows a session cannot decode are skipped, never returned, counted or fatal.

Another writer can leave rows in a session's table that the session cannot decode: a writer
cut off mid-row, an older or foreign application, or (for ``EncryptedSession``) plaintext
history from before encryption was enabled. The SDK's SQLite-family and SQLAlchemy backends skip
rows that are not valid JSON in reads and pops ("Skip invalid JSON entries"; "Drop corrupted
JSON entries and keep looking for a valid item"; a limit counts valid items), and
``EncryptedSession`` documents that plaintext records are skipped; ``RedisSession`` skips list
elements that are not JSON or not UTF-8 in reads, pops and limits. The rows are written by the
lane's adapter through a connection of its own (``Handle.write_undecodable``, see
``arib.targets.openai_agents.rows``); a lane whose adapter cannot reach the store besides the
session abstains.

A trial, on a fresh store with a seeded plan:

1. batches of items (``add_items``) interleaved with undecodable rows, the newest rows of the
   session being undecodable too, so a limited read must look past them; then (where the
   store admits a second instance) a peer session id appends the store's newest rows, which a
   read or pop that looks past a bad row must not reach;
2. ``get_items()`` is exactly the items in order; ``get_items(limit=k)`` for k = 1, 2, n and
   n + 2 is the newest k items; ``get_items(limit=0)`` is empty;
3. ``pop_item()`` twice: each takes the newest item, past the undecodable rows above it;
4. after each pop, a fresh instance on the store (where one can open it) reads what the
   session must hold: a pop that was not committed is still there for everyone else;
5. one more item is appended and popped: the session still works past the bad rows.

A read or pop that raises lets the bad row reach the caller: a violation with the exception;
one that never returns (a skip loop that cannot end) is too (``hang_invariant``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from arib.checks.base import CheckSpec, NotApplicable, Param, Selector, TrialContext, describe
from arib.checks.common import canonical, label, read_items, tally, trials_param
from arib.checks.openai_agents._stores import PEER_SUFFIX, open_peer
from arib.ground.model import Counts, Trial

CHECK_ID = "ARIB-CORRUPT-001"


@dataclass
class Ledger:
    """What one trial saw: the first problem (its mode and text) and every count."""

    valid: set[str]
    mode: str = "skipped"
    sample: str | None = None
    foreign: int = 0
    raised: int = 0  # calls that raised (a bad row that reached the caller)
    notes: list[str] = field(default_factory=list)

    def problem(self, mode: str, text: str) -> None:
        """Record a problem; the first one sets the trial's mode and sample."""
        if self.sample is None:
            self.mode, self.sample = mode, text
        self.notes.append(text)

    def compare(self, what: str, got: Sequence[Any], want: Sequence[Any]) -> None:
        """``got`` must be ``want``; items that were never written are undecodable rows
        the read returned."""
        if [canonical(i) for i in got] == [canonical(i) for i in want]:
            return
        strays = [i for i in got if canonical(i) not in self.valid]
        self.foreign += len(strays)
        mode = "undecodable_returned" if strays else "wrong_items"
        self.problem(mode, f"{what} returned {[label(i) for i in got][:4]} ({len(got)}); "
                           f"expected {[label(i) for i in want][-4:]} ({len(want)})")


def plan_rows(ctx: TrialContext, tag: str) -> list[list[Any] | int]:
    """Seeded: batches of items (lists) and runs of undecodable rows (ints), ending with a
    run of at least two undecodable rows; a run sits before every batch but the first."""
    plan: list[list[Any] | int] = [ctx.rng.randint(0, 2)]
    serial = 0
    for batch in range(ctx.params["batches"]):
        if batch:
            plan.append(ctx.rng.randint(1, 2))
        size = ctx.rng.randint(1, 3)
        plan.append([{"role": "user" if i % 2 == 0 else "assistant",
                      "content": f"{tag} item {serial + i}"} for i in range(size)])
        serial += size
    plan.append(ctx.rng.randint(2, 3))
    return [step for step in plan if step != 0]


async def run_trial(ctx: TrialContext) -> Trial:
    """One trial: items among undecodable rows; reads and pops must skip the bad rows."""
    handle = await ctx.open()
    session = handle.session
    if handle.write_undecodable is None:
        raise NotApplicable(
            f"{CHECK_ID} does not apply: it needs a writer besides the session, but "
            + (handle.private_store or f"the adapter of lane {ctx.target.name!r} has no way to "
               f"reach its store besides the session (not measured there)"))
    tag = f"{ctx.seed:016x}"
    plan = plan_rows(ctx, tag)
    items = [item for step in plan if isinstance(step, list) for item in step]
    ledger = Ledger({canonical(i) for i in items})
    ctx.log("get_items()  # first use: the session creates its tables")
    ctx.log("store, in order: " + ", ".join(
        f"add_items([{len(step)} items])" if isinstance(step, list)
        else f"{step} undecodable rows from another connection" for step in plan))
    written = 0
    try:
        await read_items(session)
        for step in plan:
            if isinstance(step, list):
                await session.add_items(step)
                continue
            for _ in range(step):
                what = await handle.write_undecodable(written)
                written += 1
                if written <= 3:
                    ctx.log(f"  {what}")
    except Exception as exc:  # noqa: BLE001 - a store that cannot be filled is evidence
        return Trial(ctx.index, ctx.seed, True, Counts(lost=len(items), raised=1),
                     mode="setup_failed", sample=f"filling the store raised {describe(exc)}",
                     ops=tuple(ctx.ops))
    probe = None
    if not handle.private_store:
        probe = (await ctx.reopen(handle)).session
        peer = await open_peer(ctx, ctx.build.session_id + PEER_SUFFIX)
        ctx.log("a peer session on the same store: add_items([2 items])  # the newest rows")
        try:
            await peer.session.add_items([{"role": "user", "content": f"{tag} peer {n}"}
                                          for n in (0, 1)])
        except Exception as exc:  # noqa: BLE001 - a store shared by two ids must serve both
            ledger.raised += 1
            ledger.problem("peer_failed", f"the peer's add_items raised {describe(exc)}")
    left = await _reads_and_pops(ctx, session, probe, items, ledger)
    final: list[Any] = []
    try:
        final = await read_items(session)
    except Exception as exc:  # noqa: BLE001
        ledger.raised += 1
        ledger.problem("read_raised", f"the last get_items() raised {describe(exc)}")
    expected = left if left is not None else items
    counts = tally(expected, [i for i in final if canonical(i) in ledger.valid],
                   raised=ledger.raised) + Counts(foreign=ledger.foreign)
    if ledger.sample is None and counts.total:
        ledger.problem("lossy", f"the last read shows {len(final)} items; expected "
                                f"{len(expected)}")
    return Trial(ctx.index, ctx.seed, ledger.sample is not None, counts, mode=ledger.mode,
                 sample="; ".join(ledger.notes[:2])[:400] if ledger.notes else None,
                 ops=tuple(ctx.ops))


async def _reads_and_pops(ctx: TrialContext, session: Any, probe: Any, items: list[Any],
                          ledger: Ledger) -> list[Any] | None:
    """Steps 2 to 5 (``probe``: a fresh instance, or None where none can open the store);
    the items that must be left, or None when a read raised."""
    n = len(items)
    ks = list(dict.fromkeys((1, 2, n, n + 2)))
    ctx.log(f"get_items(); get_items(limit=k) for k in {ks} and 0")
    try:
        ledger.compare("get_items()", await read_items(session), items)
        for k in ks:
            ledger.compare(f"get_items(limit={k})", await read_items(session, k), items[-k:])
        ledger.compare("get_items(limit=0)", await read_items(session, 0), [])
    except Exception as exc:  # noqa: BLE001 - the bad row reached the caller
        ledger.raised += 1
        ledger.problem("read_raised", f"a read raised {describe(exc)}")
        return None
    left = list(items)
    extra = {"role": "user", "content": f"{ctx.seed:016x} after the bad rows"}
    ctx.log("pop_item() twice, each followed by get_items() on a fresh instance; "
            "add_items([one more]); pop_item(); get_items()")
    try:
        for n_pop in (1, 2):
            popped = await session.pop_item()
            want = left.pop() if left else None
            _judge_pop(ledger, f"pop {n_pop}", popped, want)
            if probe is not None:
                ledger.compare(f"after pop {n_pop}, a fresh instance's get_items()",
                               await read_items(probe), left)
        await session.add_items([extra])
        ledger.valid.add(canonical(extra))
        _judge_pop(ledger, "the pop after one more append", await session.pop_item(), extra)
        ledger.compare("get_items() after the pops", await read_items(session), left)
    except Exception as exc:  # noqa: BLE001 - the bad row reached the caller
        ledger.raised += 1
        ledger.problem("pop_raised", f"a pop, append or read after it raised {describe(exc)}")
    return left


def _judge_pop(ledger: Ledger, what: str, popped: Any, want: Any) -> None:
    if popped is not None and canonical(popped) not in ledger.valid:
        ledger.foreign += 1
        ledger.problem("undecodable_returned", f"{what} returned {label(popped)}, which no "
                                               f"add_items() wrote")
    elif (None if popped is None else canonical(popped)) != (
            None if want is None else canonical(want)):
        ledger.problem("pop_wrong", f"{what} returned "
                                    f"{None if popped is None else label(popped)}; expected "
                                    f"{None if want is None else label(want)}")


CHECK = CheckSpec(
    id=CHECK_ID,
    invariant="rows another writer left that the session cannot decode are skipped: "
    "get_items() and get_items(limit=k) return the newest k items that were written, in order, "
    "pop_item() returns the newest of them, and none is lost, duplicated or replaced",
    fault="seeded batches of add_items() interleaved with undecodable rows written by another "
    "connection or client (cut-off JSON, text, nothing; for EncryptedSession also plaintext "
    "items; for RedisSession also bytes that are not UTF-8), the session's newest rows "
    "undecodable and a peer session's rows newer still; then full, limited (1, 2, n, n + 2, 0) "
    "reads, two pops, one more append and pop; a fresh instance reads after each pop",
    params=(
        Param("batches", 4, 1, 50, "batches of items between runs of undecodable rows"),
        trials_param(3),
    ),
    run_trial=run_trial,
    mutants=(
        "reference_decodes_every_row",
        "sqlite_limit_counts_undecodable_rows",
        "async_sqlite_pop_gives_up_at_undecodable_row",
    ),
    generated=(
        Selector("reference", "ReferenceSession.pop_item.<locals>.pop", "flip_comparison"),
        Selector("sqlite-file", "SQLiteSession._pop_item_with_validation.<locals>._pop_item_sync",
                 "single_attempt_loop"),
        Selector("async-sqlite-file", "AsyncSQLiteSession.pop_item", "single_attempt_loop"),
        Selector("sqlalchemy-sqlite-file", "SQLAlchemySession._pop_item", "single_attempt_loop"),
        Selector("async-sqlite-file", "AsyncSQLiteSession.pop_item", "drop_commit"),
        Selector("redis-from-url", "RedisSession._pop_item_locked", "single_attempt_loop"),
        Selector("redis-injected-client", "RedisSession._pop_item_locked",
                 "single_attempt_loop"),
    ),
    timeout_s=60.0,
    hang_invariant=True,
)
