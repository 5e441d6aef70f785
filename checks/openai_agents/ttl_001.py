"""ARIB-TTL-001: a session with a ttl keeps its history for the ttl, then loses all of it.

Agent servers give RedisSession a ``ttl`` ("time-to-live in seconds for session data; if
None, data persists indefinitely", openai-agents 0.24.0) so that abandoned conversations
leave the store by themselves. Agent code then relies on two things: a conversation in use is
not cut short (every acknowledged item is there, in order, while the ttl has not passed), and
an abandoned one really goes (no stale history is fed back to the model once the ttl has
passed since its last write, and a later turn starts afresh). Whether a write restarts the
ttl is not documented, so the check asserts only what holds either way: items stay readable
for the ttl counted from the session's FIRST write, and are gone once the ttl has passed since
its LAST write.

A trial, on a fresh store opened with ``ttl`` (``TrialContext.open_configured``; a lane whose
builder takes no ttl abstains), and a second instance on the same store:

1. two seeded batches of ``add_items``; each must be acknowledged;
2. at once, again at 10% and at about 60% of the ttl: ``get_items()``, ``get_items(limit=1)``
   and the second instance's ``get_items()`` return every item, in order. (The read at 10%
   is the one a loaded machine judges: a read at once can end within a millisecond of the
   write, and one at 60% is left unjudged by a stall of a third of a second; with only those
   two, a ttl taken as milliseconds was killed in some admission reruns and not others.) A
   read is judged only if it ENDED before the ttl had passed since the first write began
   (minus a small slack); a loaded machine can make a late read unjudged, never wrongly
   judged. A trial in which no
   read could be judged raises (an ``error`` finding: the machine was too slow to measure);
3. once the ttl (plus a grace for clock rounding) has passed since the last write returned:
   ``get_items()``, ``get_items(limit=1)`` and the second instance's ``get_items()`` are
   empty, and ``pop_item()`` returns None;
4. one more item is added: the session works, and holds only that item (the expired history
   does not come back).

The check sleeps for the ttl itself, so it uses the smallest the API takes (1 s).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import anyio

from arib.checks.base import CheckSpec, Param, Selector, TrialContext, describe
from arib.checks.common import canonical, label, read_items, trials_param
from arib.checks.openai_agents._problems import Problems
from arib.ground.model import Counts, Trial

CHECK_ID = "ARIB-TTL-001"
# A read counts as "before the ttl" only if it ended this long before the ttl passed since the
# first write began (the server's millisecond rounding and its clock against ours).
SLACK_S = 0.05
# A read counts as "after the ttl" only if it began this long after the ttl passed since the
# last write returned.
GRACE_S = 0.15
# The later in-window reads, as fractions of the ttl after the first write began.
EARLY_FRACTION = 0.1
LATE_FRACTION = 0.6


@dataclass
class Ledger(Problems):
    """What one trial saw (its problems and counts; items kept past the ttl count as foreign),
    and which reads it judged."""

    judged: int = 0
    unjudged: list[str] = field(default_factory=list)


async def _read(ledger: Ledger, what: str, call: Callable[[], Awaitable[Any]]) -> Any:
    """The value of one read, or None after noting the exception it raised."""
    try:
        return await call()
    except Exception as exc:  # noqa: BLE001 - a read that raises cannot show the items
        ledger.raised += 1
        ledger.add("read_raised", f"{what} raised {describe(exc)}")
        return None


Reads = dict[str, tuple[Callable[[], Awaitable[Any]], int | None]]


async def _in_window(ledger: Ledger, reads: Reads, items: list[Any], deadline: float,
                     when: str) -> None:
    """Each read must return its expected items, if it ended before ``deadline``."""
    want = [canonical(i) for i in items]
    for what, (call, k) in reads.items():
        got = await _read(ledger, f"{what} {when}", call)
        if time.monotonic() > deadline:
            ledger.unjudged.append(f"{what} {when}")
            continue
        ledger.judged += 1
        if got is None:
            continue
        expected = want if k is None else want[-k:]
        if [canonical(i) for i in got] != expected:
            ledger.lost += len(set(expected) - {canonical(i) for i in got})
            ledger.add("expired_early", f"{what} {when} returned "
                       f"{[label(i) for i in got][:3]} ({len(got)} items); expected "
                       f"{len(expected)} items")


async def _after_expiry(ledger: Ledger, reads: Reads, session: Any) -> None:
    """Every read is empty and pop_item() returns None."""
    for what, (call, _k) in reads.items():
        got = await _read(ledger, f"{what} after the ttl", call)
        if got:
            ledger.foreign += len(got)
            ledger.add("not_expired", f"{what} after the ttl returned "
                       f"{[label(i) for i in got][:3]} ({len(got)} items); expected none")
    popped = await _read(ledger, "pop_item() after the ttl", session.pop_item)
    if popped is not None:
        ledger.foreign += 1
        ledger.add("not_expired", f"pop_item() after the ttl returned {label(popped)}; "
                                  f"expected None")


async def run_trial(ctx: TrialContext) -> Trial:
    """One trial: items written with a ttl are read within it, then must be gone after it."""
    ttl = ctx.params["ttl"]
    handle = await ctx.open_configured(ttl=ttl)
    session = handle.session
    probe = None if handle.private_store else (await ctx.reopen(handle)).session
    tag = f"{ctx.seed:016x}"
    sizes = [ctx.rng.randint(1, 3), ctx.rng.randint(1, 3)]
    batches = [[{"role": "user" if (b + i) % 2 == 0 else "assistant",
                 "content": f"{tag} batch {b} item {i}"} for i in range(size)]
               for b, size in enumerate(sizes)]
    items = [item for batch in batches for item in batch]
    reads: Reads = {"get_items()": (lambda: read_items(session), None),
                             "get_items(limit=1)": (lambda: read_items(session, 1), 1)}
    if probe is not None:
        reads["a second instance's get_items()"] = (lambda: read_items(probe), None)
    ledger = Ledger()
    ctx.log(f"open with ttl={ttl}; add_items([{sizes[0]} items]); add_items([{sizes[1]} items])")
    first = time.monotonic()
    try:
        for batch in batches:
            await session.add_items(batch)
    except Exception as exc:  # noqa: BLE001 - a write the ttl makes fail is the evidence
        return Trial(ctx.index, ctx.seed, True, Counts(lost=len(items), raised=1),
                     mode="write_refused", sample=f"add_items with ttl={ttl} raised "
                     f"{describe(exc)}", ops=tuple(ctx.ops))
    last = time.monotonic()
    readable_until = first + ttl - SLACK_S
    ctx.log(f"at once, at {EARLY_FRACTION:.0%} and at {LATE_FRACTION:.0%} of the ttl: "
            f"{', '.join(reads)}  # every item, in order")
    await _in_window(ledger, reads, items, readable_until, "at once")
    await anyio.sleep(max(0.0, first + EARLY_FRACTION * ttl - time.monotonic()))
    await _in_window(ledger, reads, items, readable_until, "early in the ttl")
    await anyio.sleep(max(0.0, first + LATE_FRACTION * ttl - time.monotonic()))
    await _in_window(ledger, reads, items, readable_until, "late in the ttl")
    if not ledger.judged:
        raise RuntimeError(
            f"{CHECK_ID} could not judge trial {ctx.index}: no read ended within the ttl "
            f"({ttl}s) of the first write (unjudged: {', '.join(ledger.unjudged)}); the "
            f"machine is too loaded to measure a ttl this short; rerun when it is less loaded")
    ctx.log(f"wait until {ttl}s + {GRACE_S}s after the last write; {', '.join(reads)}; "
            f"pop_item()  # nothing")
    await anyio.sleep(max(0.0, last + ttl + GRACE_S - time.monotonic()))
    await _after_expiry(ledger, reads, session)
    fresh = {"role": "user", "content": f"{tag} after the ttl"}
    ctx.log("add_items([1 item]); get_items()  # only that item")
    try:
        await session.add_items([fresh])
        got = await read_items(session)
        if [canonical(i) for i in got] != [canonical(fresh)]:
            ledger.foreign += max(0, len(got) - 1)
            ledger.add("not_expired" if len(got) > 1 else "wrong_items",
                       f"after the ttl and one more add_items, get_items() returned "
                       f"{[label(i) for i in got][:3]} ({len(got)} items); expected 1")
    except Exception as exc:  # noqa: BLE001 - a session that stops working after expiry
        ledger.raised += 1
        ledger.add("broken_after_expiry", f"add_items or get_items after the ttl raised "
                                          f"{describe(exc)}")
    if ledger.unjudged:
        ctx.log(f"not judged (ended after the ttl on a loaded machine): "
                f"{', '.join(ledger.unjudged)}")
    return ledger.trial(ctx, "expired_on_time")


CHECK = CheckSpec(
    id=CHECK_ID,
    invariant="with a ttl, every acknowledged item stays readable, in order, through any "
    "instance, until the ttl has passed since the session's first write, and once it has "
    "passed since the last write the whole history is gone (reads empty, pop None) and the "
    "session starts afresh",
    fault="the session opened with its documented ttl option (parameter ttl: 1 s, the smallest "
    "the API takes); two seeded batches; reads "
    "at once, at 10% and at 60% of the ttl (judged only if they end inside it), through the "
    "session "
    "and a second instance; reads and a pop after the ttl plus a grace; one more write",
    params=(
        Param("ttl", 1, 1, 30, "the ttl in seconds the session is opened with"),
        trials_param(1),
    ),
    run_trial=run_trial,
    mutants=(
        "reference_ttl_ignored",
        "reference_ttl_in_milliseconds",
        "redis_ttl_spares_the_messages",
    ),
    generated=(
        Selector("redis-from-url", "RedisSession._mutate_items_attempt", "drop_await"),
        Selector("redis-injected-client", "RedisSession._mutate_items_attempt", "drop_await"),
    ),
    timeout_s=60.0,
)
