"""ARIB-CANCEL-001: a cancelled add_items() is all or nothing, settled, and safe to retry.

The cancellation point is counted in the call's own suspensions, not in wall-clock time: the
add_items() coroutine runs in its own asyncio task behind a counting wrapper, and at its k-th
suspension the task is cancelled before it yields, so the CancelledError arrives exactly at
that await whatever the backend's worker threads are doing. Each trial first makes the call
uncancelled (k = 0) to count its suspensions n, then sweeps every k = 1 .. min(n, ``points``)
in a seeded order, with a seeded batch size; each point on a fresh store:

1. open a session, append one item and read (so the cancelled call runs warm);
2. add_items(batch), cancelled at its k-th suspension;
3. the caller reads through its own session, and a fresh instance reads the store: both must
   show the batch wholly present or wholly absent, and the same (else the caller cannot tell);
4. the caller retries when it saw the batch absent, appends one more item, and closes;
5. a fresh instance reads: the batch is there exactly once, between the two other items.

A call that returned must have stored the batch. The outcome is recorded per cancellation
point as a mode: ``returned_then_once``, ``absent_then_once``, ``present_then_once`` (held), or
``partial``, ``divergent_view``, ``absent_then_duplicated`` (a late commit: at-least-once),
``present_then_lost``, ``lost``, ``poisoned_session``, ``hung_after_cancel`` (violated).
"""

from __future__ import annotations

import asyncio
from typing import Any

import anyio

from arib.checks._suspend import at_suspension, cancel_current
from arib.checks.base import CheckSpec, Param, ParityFault, Selector, TrialContext, describe
from arib.checks.common import canonical, read_items, trials_param
from arib.checks.openai_agents._stores import require_shared_store
from arib.ground.model import Counts, Trial
from arib.targets.base import BuildContext, Handle

CHECK_ID = "ARIB-CANCEL-001"
OP_TIMEOUT_S = 5.0
HELD_MODES = ("returned_then_once", "absent_then_once", "present_then_once")


class _Outcome:
    """What the cancelled call did, as its caller sees it."""

    def __init__(self) -> None:
        self.suspensions = 0
        self.cancel_sent = False
        self.kind = "returned"  # "returned" | "cancelled" | "raised"
        self.error: BaseException | None = None


async def _cancelled_call(session: Any, batch: list[Any], k: int) -> _Outcome:
    """add_items(batch) cancelled at its k-th suspension; never raises."""
    outcome = _Outcome()

    seen = [0]

    def cancel() -> None:
        cancel_current()
        outcome.cancel_sent = True

    async def call() -> None:
        try:
            await at_suspension(session.add_items(batch), k, cancel, seen)
        finally:
            outcome.suspensions = seen[0]

    task = asyncio.ensure_future(call())
    await asyncio.wait({task})
    if task.cancelled():
        outcome.kind = "cancelled"
    elif task.exception() is not None:
        outcome.kind, outcome.error = "raised", task.exception()
    return outcome


def _key(item: Any) -> str:
    """Canonical JSON of an item, or a marker for one that is not JSON at all."""
    try:
        return canonical(item)
    except (TypeError, ValueError):
        return f"<not JSON: {type(item).__name__}>"


def _copies(batch: list[Any], seen: list[Any]) -> list[int]:
    """How many times each batch item is in ``seen``."""
    keys = [_key(i) for i in seen]
    return [keys.count(canonical(item)) for item in batch]


def _state(copies: list[int]) -> str:
    if all(c == 0 for c in copies):
        return "absent"
    if all(c == 1 for c in copies):
        return "present"
    if any(c > 1 for c in copies):
        return "duplicated"
    return "partial"


async def _read(session: Any) -> list[Any]:
    with anyio.fail_after(OP_TIMEOUT_S):
        return await read_items(session)


async def _point(ctx: TrialContext, k: int, size: int, notes: list[str],
                 spent: dict[int, int]) -> tuple[str, Counts]:
    """One cancellation point (0: none) on a fresh store: its mode and counts.

    ``spent[k]`` gets the number of suspensions the call made. Backend errors are evidence.

    Long (over 80 lines) on purpose: one cancellation point is one scenario (open, cancel at
    the k-th suspension, recover, judge), read top to bottom.
    """
    root = ctx.build.root / f"k{k}"
    root.mkdir()
    build = BuildContext(root, ctx.build.session_id, ctx.build.services)
    tag = f"{ctx.seed:x}-k{k}"
    before = {"role": "user", "content": f"{tag} before"}
    batch = [{"role": "assistant" if i % 2 else "user", "content": f"{tag} batch {i}"}
             for i in range(size)]
    after = {"role": "user", "content": f"{tag} after"}
    handles: list[Handle] = []

    async def fresh() -> list[Any]:
        handle = await ctx.target.build(build)
        handles.append(handle)
        return await _read(handle.session)

    try:
        try:
            handle = await ctx.target.build(build)
            handles.append(handle)
            session = handle.session
            await session.add_items([before])
            await _read(session)
        except Exception as exc:  # noqa: BLE001
            notes.append(f"k={k}: setup raised {describe(exc)}")
            return "setup_failed", Counts(raised=1)
        require_shared_store(handle, CHECK_ID, "a fresh instance that reads the store beside "
                             "the caller")
        outcome = await _cancelled_call(session, batch, k)
        spent[k] = outcome.suspensions
        what = {"returned": "returned", "cancelled": "raised CancelledError",
                "raised": f"raised {describe(outcome.error)}"}[outcome.kind]
        if outcome.cancel_sent:
            where = f"cancel at suspension {k}"
        else:
            where = f"not cancelled ({outcome.suspensions} suspensions)"
        try:
            own = _state(_copies(batch, await _read(session)))
        except TimeoutError:
            notes.append(f"k={k}: {where}, call {what}; the caller's next read hung")
            return "hung_after_cancel", Counts(wrong_result=1)
        except Exception as exc:  # noqa: BLE001 - the caller cannot read its own session
            notes.append(f"k={k}: {where}, call {what}; the caller's read raised "
                         f"{describe(exc)}")
            return "poisoned_session", Counts(raised=1)
        try:
            other = _state(_copies(batch, await fresh()))
        except Exception as exc:  # noqa: BLE001
            notes.append(f"k={k}: {where}; a fresh instance's read raised {describe(exc)}")
            return "probe_failed", Counts(raised=1)
        if own != other:
            notes.append(f"k={k}: {where}, call {what}; the caller sees the batch {own}, a "
                         f"fresh instance sees it {other}")
            return "divergent_view", Counts(wrong_result=1)
        if own in ("partial", "duplicated"):
            notes.append(f"k={k}: {where}, call {what}; the batch is {own}")
            return own, Counts(wrong_result=1)
        if outcome.kind == "returned" and own == "absent":
            notes.append(f"k={k}: {where}; add_items returned but the batch is absent")
            return "lost", Counts(lost=size)
        try:
            with anyio.fail_after(OP_TIMEOUT_S):
                if own == "absent":
                    await session.add_items(batch)  # the retry the caller decides on
                await session.add_items([after])
                if ctx.target.claims.has_close:
                    await ctx.close(session)
        except TimeoutError:
            notes.append(f"k={k}: {where}, call {what}; the retry or the next append hung")
            return "hung_after_cancel", Counts(wrong_result=1)
        except Exception as exc:  # noqa: BLE001
            notes.append(f"k={k}: {where}, call {what}; saw {own}; the retry, next append or "
                         f"close raised {describe(exc)}")
            return "poisoned_session", Counts(raised=1)
        try:
            final = await fresh()
        except Exception as exc:  # noqa: BLE001
            notes.append(f"k={k}: the final read raised {describe(exc)}")
            return "probe_failed", Counts(raised=1)
        copies = _copies(batch, final)
        keys = [_key(i) for i in final]
        expected = [canonical(i) for i in (before, *batch, after)]
        seen_as = "returned" if outcome.kind == "returned" else own
        if all(c == 1 for c in copies) and keys == expected:
            return f"{seen_as}_then_once", Counts()
        state = _state(copies)
        mode = f"{seen_as}_then_{'lost' if state == 'absent' else state}"
        if state == "present":
            mode = f"{seen_as}_then_reordered"
        notes.append(f"k={k}: {where}, call {what}; the caller saw the batch {own}"
                     f"{', retried' if own == 'absent' else ''}; in the end the batch copies "
                     f"are {copies} and the history is {len(final)} items")
        lost = sum(1 for c in copies if c == 0) + sum(
            1 for item in (before, after) if canonical(item) not in keys)
        return mode, Counts(lost=lost, duplicated=sum(max(c - 1, 0) for c in copies),
                            foreign=max(len(final) - len(expected) - sum(
                                max(c - 1, 0) for c in copies), 0))
    finally:
        for handle in reversed(handles):
            with anyio.CancelScope(shield=True):
                await handle.dispose()


async def run_trial(ctx: TrialContext) -> Trial:
    """One trial: add_items cancelled at each sampled suspension, each on a fresh store."""
    size = ctx.rng.randint(2, 4)
    notes: list[str] = []
    modes: dict[int, str] = {}
    ctx.log(f"dry run on a fresh store: add_items([before]); get_items(); add_items(batch of "
            f"{size}) not cancelled  # counts its suspensions n")
    spent: dict[int, int] = {}
    modes[0], counts = await _point(ctx, 0, size, notes, spent)
    suspensions = spent.get(0, 0)
    points = list(range(1, min(suspensions, ctx.params["points"]) + 1))
    ctx.rng.shuffle(points)
    ctx.log(f"for each cancellation point k in {points} (n = {suspensions}), on a fresh store: "
            f"add_items([before]); get_items()")
    ctx.log(f"add_items(batch of {size}) cancelled at its k-th suspension")
    ctx.log("get_items() on the caller's session; get_items() on a fresh instance")
    ctx.log("if the caller saw the batch absent: add_items(batch) again; add_items([after]); "
            "close")
    ctx.log("fresh instance: get_items()  # the batch exactly once, between before and after")
    for k in points:
        modes[k], found = await _point(ctx, k, size, notes, spent)
        counts = counts + found
    bad = sorted(k for k, mode in modes.items() if mode not in HELD_MODES)
    if bad:
        mode = modes[bad[0]]
    else:
        mode = "+".join(sorted(set(modes.values())))
    ctx.log("modes by k (0: not cancelled): " + ", ".join(f"{k}={modes[k]}" for k in
                                                          sorted(modes)))
    sample = "; ".join(notes[:2]) if notes else None
    return Trial(ctx.index, ctx.seed, bool(bad), counts, mode=mode, sample=sample,
                 ops=tuple(ctx.ops))


CHECK = CheckSpec(
    id=CHECK_ID,
    invariant="a cancelled add_items() leaves its batch wholly present or wholly absent, the "
    "same for every reader at once, and a retry decided on that read stores it exactly once",
    fault="add_items() cancelled at its k-th suspension, for every k up to the suspensions "
    "an uncancelled call makes (at most points), each on a fresh store; then read by the "
    "caller and by a fresh instance, retried if absent",
    params=(
        Param("points", 16, 1, 64, "at most this many cancellation points per trial"),
        trials_param(2, "independent trials (seeded batch size and point order)"),
    ),
    run_trial=run_trial,
    mutants=(
        "reference_cancel_partial_batch",
        "reference_cancel_replays_parked_write",
        "sqlite_cancel_partial_batch",
    ),
    generated=(
        Selector("reference", "ReferenceSession.add_items", "early_return"),
        Selector("reference", "ReferenceSession.add_items", "drop_await"),
        Selector("sqlite-file", "SQLiteSession.add_items", "early_return"),
        Selector("advanced-sqlite-file", "AdvancedSQLiteSession.add_items", "early_return"),
        Selector("sqlalchemy-sqlite-file", "SQLAlchemySession.add_items", "early_return"),
    ),
    timeout_s=60.0,
    parity=(
        ParityFault(
            "fault_cancelled_write", "fault:cancel",
            "add_items cancelled at its first, last and middle suspensions: kept or rolled "
            "back",
            "arib.checks.openai_agents.parity.faults:CancelledWrite",
        ),
    ),
)
