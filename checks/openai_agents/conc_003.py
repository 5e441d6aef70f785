"""ARIB-CONC-003: every write after close is refused loudly, never silently committed or dropped.

A closed session must refuse every write (DESIGN: "a closed session accepted a write" is the
silent failure this bench exists for). After ``close()`` four writes are tried on the closed
session, in this order, each judged on its own by reading the store through a fresh instance
before and after it:

- ``add``: ``add_items([item])``;
- ``add([])``: ``add_items([])``, an empty batch;
- ``pop``: ``pop_item()`` (there are two items written before close, so there is one to take);
- ``clear``: ``clear_session()``.

Outcome mode of each write, from two facts: did the call raise, and did the store change?

| raised | store changed | mode                  |
|--------|---------------|-----------------------|
| yes    | no            | ``loud_refusal``      |
| no     | no            | ``silent_drop``       |
| no     | yes           | ``silent_commit``     |
| yes    | yes           | ``raise_but_committed`` |

So a pop that silently removes an item, or a clear that silently empties the store, is a
``silent_commit``; a pop that returns (None, or an item it did not remove) without raising is a
``silent_drop``. An empty batch that returns normally is a ``silent_drop`` too: it stores
nothing because there is nothing to store, but the closed session accepted a write without
telling the caller it is closed, which is the whole of what this invariant forbids (the
caller, told nothing, goes on writing to a dead session). Only ``loud_refusal`` keeps the
invariant, and the items written before close must all still be there at the end (when they
are not, although every write was refused, the trial's mode is ``lost_before_close``).

Where no second instance can open the store (``SQLiteSession(":memory:")``: the store lives in
the session's own connection, so close() ends it, as ``Handle.private_store`` says), nothing
can change or read the store after close; each write is then judged by whether it raised
(``loud_refusal``) or returned (``silent_drop``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from arib.checks.base import CheckSpec, ParityFault, Selector, TrialContext, describe
from arib.checks.common import canonical, read_items, trials_param
from arib.ground.model import Counts, Trial

MODES = ("loud_refusal", "silent_drop", "silent_commit", "raise_but_committed")
OPS = ("add", "add([])", "pop", "clear")


def outcome_mode(raised: bool, changed: bool) -> str:
    """The outcome mode of one write on a closed session (see the module docstring)."""
    if raised:
        return "raise_but_committed" if changed else "loud_refusal"
    return "silent_commit" if changed else "silent_drop"


def trial_mode(per_op: Mapping[str, str]) -> str:
    """``loud_refusal`` when every write was refused loudly, else every write's mode."""
    if all(mode == "loud_refusal" for mode in per_op.values()):
        return "loud_refusal"
    return " ".join(f"{op}={mode}" for op, mode in per_op.items())


def _write(session: Any, op: str, after: Any) -> Callable[[], Awaitable[Any]]:
    if op == "add":
        return lambda: session.add_items([after])
    if op == "add([])":
        return lambda: session.add_items([])
    if op == "pop":
        return session.pop_item  # type: ignore[no-any-return]
    return session.clear_session  # type: ignore[no-any-return]


async def _private_store_trial(ctx: TrialContext, session: Any, after: Any) -> Trial:
    """A store that lives in the closed instance's own connection ends with it (nothing can
    change it any more, nothing can read it): each write is judged by whether it raised."""
    per_op: dict[str, str] = {}
    notes: list[str] = []
    for op in OPS:
        ctx.log(f"{op} on the closed session  # its private store ended with close()")
        try:
            returned = await _write(session, op, after)()
        except Exception:  # noqa: BLE001 - refusal is the expected outcome
            per_op[op] = "loud_refusal"
            continue
        per_op[op] = "silent_drop"
        notes.append(f"{op} returned {canonical(returned)[:60]}")
    mode = trial_mode(per_op)
    sample = f"{mode}: " + "; ".join(notes) if notes else None
    return Trial(ctx.index, ctx.seed, mode != "loud_refusal", Counts(), mode=mode,
                 sample=sample[:400] if sample else None, ops=tuple(ctx.ops))


async def run_trial(ctx: TrialContext) -> Trial:
    """One trial: four writes on a closed session; each must raise and leave the store as it was."""
    handle = await ctx.open()
    session = handle.session
    before = [{"role": "user", "content": f"{ctx.seed:x} written before close #{n}"}
              for n in (1, 2)]
    after = {"role": "user", "content": f"{ctx.seed:x} written after close"}
    ctx.log("add_items([before 1, before 2]); close()")
    try:
        await session.add_items(before)
        await ctx.close(session)
    except Exception as exc:  # noqa: BLE001
        return Trial(ctx.index, ctx.seed, True, Counts(raised=1), mode="setup_failed",
                     sample=f"write or close before the probe raised {describe(exc)}",
                     ops=tuple(ctx.ops))
    if handle.private_store:
        ctx.log(f"no fresh instance: {handle.private_store}")
        return await _private_store_trial(ctx, session, after)
    per_op: dict[str, str] = {}
    notes: list[str] = []
    foreign = 0
    ctx.log("fresh instance on the same store: get_items()  # the store before the writes")
    try:
        probe = await ctx.reopen(handle)
        state = [canonical(i) for i in await read_items(probe.session)]
        for op in OPS:
            ctx.log(f"{op} on the closed session; get_items() on the fresh instance")
            refused: BaseException | None = None
            returned: Any = None
            try:
                returned = await _write(session, op, after)()
            except Exception as exc:  # noqa: BLE001 - refusal is the expected outcome
                refused = exc
            now = [canonical(i) for i in await read_items(probe.session)]
            added = [key for key in now if key not in state]
            removed = [key for key in state if key not in now]
            per_op[op] = outcome_mode(refused is not None, now != state)
            foreign += len(added)
            if per_op[op] != "loud_refusal":
                what = (f"returned {canonical(returned)[:60]}" if refused is None
                        else f"raised {describe(refused)}")
                notes.append(f"{op} {what}; store +{len(added)} -{len(removed)}")
            state = now
    except Exception as exc:  # noqa: BLE001 - a probe that cannot read shows nothing
        return Trial(ctx.index, ctx.seed, True, Counts(lost=len(before), raised=1),
                     mode="probe_failed", sample=f"probe read raised {describe(exc)}",
                     ops=tuple(ctx.ops))
    lost = sum(1 for item in before if canonical(item) not in state)
    if lost:
        notes.append(f"{lost}/{len(before)} items written before close are gone")
    mode = trial_mode(per_op)
    if lost and mode == "loud_refusal":
        mode = "lost_before_close"  # every write refused, but the earlier items are gone
    sample = f"{mode}" + (": " + "; ".join(notes) if notes else "")
    return Trial(ctx.index, ctx.seed, mode != "loud_refusal" or lost > 0,
                 Counts(lost=lost, foreign=foreign), mode=mode, sample=sample[:400],
                 ops=tuple(ctx.ops))


CHECK = CheckSpec(
    id="ARIB-CONC-003",
    invariant="every write after close (add_items, also of an empty batch, pop_item, "
    "clear_session) is refused loudly, never silently committed or dropped, and the store "
    "keeps what was written before close",
    fault="add_items([item]), add_items([]), pop_item() and clear_session() on a closed "
    "session, each judged by reading the store through a fresh instance before and after it",
    params=(trials_param(5),),
    run_trial=run_trial,
    mutants=(
        "reference_silent_drop_after_close",
        "reference_persist_then_raise_after_close",
        "reference_without_close",
        "reference_false_no_close_claim",
        "sqlite_silent_drop_after_close",
        "sqlite_persist_then_raise_after_close",
        "advanced_close_is_a_no_op",
        "reference_pop_after_close_returns_none",
        "reference_clear_after_close_succeeds",
        "reference_empty_add_skips_closed_check",
        "reference_pop_after_close_commits_then_raises",
        "sqlite_empty_add_skips_closed_check",
        "sqlite_clear_after_close_reopens",
        "advanced_pop_after_close_returns_none",
    ),
    generated=(
        Selector("reference", "ReferenceSession.add_items", "early_return"),
        Selector("sqlite-file", "SQLiteSession.add_items", "early_return"),
        Selector("sqlite-file", "SQLiteSession.add_items.<locals>._add_items_sync",
                 "drop_commit"),
        Selector("advanced-sqlite-file",
                 "AdvancedSQLiteSession.add_items.<locals>._add_items_sync", "drop_commit"),
        Selector("reference", "ReferenceSession.pop_item", "early_return"),
        Selector("reference", "ReferenceSession.clear_session", "early_return"),
        Selector("sqlite-file", "SQLiteSession.clear_session", "early_return"),
        Selector("sqlite-file", "SQLiteSession._get_connection", "drop_closed_guard"),
        Selector("sqlite-memory", "SQLiteSession.add_items", "drop_closed_guard"),
    ),
    requires_close=True,
    requires_terminal_close=True,
    timeout_s=60.0,
    parity=(
        ParityFault(
            "fault_writes_after_close", "fault:close",
            "add, add([]), pop and clear on a closed session: refused loudly or not",
            "arib.checks.openai_agents.parity.faults:WritesAfterClose",
        ),
    ),
)
