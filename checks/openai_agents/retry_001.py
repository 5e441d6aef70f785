"""ARIB-RETRY-001: a "database is locked" inside a write leaves it all or nothing, the session
usable, and, where the backend retries such errors, never reaches the caller.

The fault is SQLite's own error at the driver boundary
(``arib.checks.openai_agents._sqlite_faults``): from the k-th statement of one ``add_items``,
``pop_item`` or ``clear_session`` call, every connection to the trial's store file raises
``sqlite3.OperationalError("database is locked")``, as SQLite does when another connection or
process holds the database past the busy timeout, in three modes: once; once with the rollback that
follows failing too (``disk I/O error``: the connection keeps the failed transaction until it is
closed); and, on appends, twice in a row (the retry meets it again). Each call is judged on its own,
against what the store held before it, read through a fresh instance (where one can open the store)
and through the session itself:

- a call that returned did its work exactly once (a pop returned the newest item and removed
  it; an append stored its batch once; a clear emptied the session);
- a call that raised did none of it, raised only when the fault fired, and its error says
  what happened (the database was locked, or could not roll back), not a failure of its own;
- the session's own read equals the fresh instance's (no write half-kept on its connection),
  and no connection holds the store's write lock once the call has returned or raised (a
  transaction left open blocks every other writer);
- a backend that claims to retry lock errors (``Claims.retries_lock_errors``: SQLAlchemySession
  on SQLite, the reference) lets none reach the caller (the rollback's own I/O error may).

The clean calls that count the statements are judged the same way, and so is a pop of the
emptied session (it answers None and, like every call, keeps no transaction open).

k sweeps a seeded sample of at most ``points`` of the statements a clean call of the same kind
makes, so faults land between the statements of a multi-statement write and on its commit. A
lane whose store is not a SQLite file (in memory, or on a server) abstains: no other connection
can lock it, so the fault cannot happen there; that is read from the connections the backend
opened.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from arib.checks.base import CheckSpec, NotApplicable, Param, Selector, TrialContext, describe
from arib.checks.common import canonical, label, read_items, trials_param
from arib.checks.openai_agents._problems import Problems
from arib.checks.openai_agents._sqlite_faults import LOCKED, ROLLBACK_FAILED, SqliteWatch
from arib.ground.model import Trial

CHECK_ID = "ARIB-RETRY-001"
OPS = ("add", "pop", "clear")
CAUSES = (LOCKED, ROLLBACK_FAILED)  # what a refused call's error must say
# (mode, times the fault fires in a row, the rollback after it fails, the calls it is tried on)
HELD = "all_or_nothing"  # the mode of a trial that found no problem
MODES = (("once", 1, False, OPS), ("rollback fails", 1, True, OPS), ("twice", 2, False, ("add",)))


def _keys(items: list[Any]) -> list[str]:
    return [canonical(i) for i in items]


def expected_after(op: str, before: list[Any], batch: list[Any]) -> list[Any]:
    """What the store holds after ``op`` did its work once."""
    if op == "add":
        return [*before, *batch]
    if op == "pop":
        return before[:-1]
    return []


def judge_call(op: str, before: list[Any], batch: list[Any], returned: Any,
               raised: BaseException | None, fired: bool, retries: bool, store: list[Any],
               own: list[Any], v: Problems, where: str, locked: str | None = None
               ) -> list[Any]:
    """Judge one call (``locked``: a store file still write-locked after it); returns what
    the store holds now (as read)."""
    after = expected_after(op, before, batch)
    if locked is not None:
        v.wrong_result += 1
        v.add("lock_kept", f"{where}: after the call, {Path(locked).name} is still "
                           f"write-locked: a transaction of the session was left open")
    if _keys(own) != _keys(store):
        v.wrong_result += 1
        v.add("divergent_view", f"{where}: the session reads {len(own)} items, a fresh "
                                f"instance {len(store)}: a write half-kept on its connection")
    if raised is not None:
        if not fired:
            v.raised += 1  # no fault fired: the call had to succeed
            v.add("raised_unprovoked", f"{where}: raised {describe(raised)} before the fault "
                                       f"fired (a session left broken by an earlier fault)")
        elif retries and LOCKED in str(raised).lower():
            v.raised += 1  # the backend retries: the call had to succeed
            v.add("lock_error_escaped", f"{where}: raised {describe(raised)}, though the "
                                        f"backend retries lock errors")
        elif not any(cause.lower() in str(raised).lower() for cause in CAUSES):
            v.wrong_result += 1  # it may raise, but its exception must name the cause
            v.add("cause_hidden", f"{where}: raised {describe(raised)}, which does not say "
                                  f"that the database was locked (or could not roll back)")
        if _keys(store) != _keys(before):
            v.add("raised_but_applied", f"{where}: raised {describe(raised)}, yet the store "
                                        f"went from {len(before)} to {len(store)} items")
            v.foreign += max(len(store) - len(before), 0)
            v.lost += max(len(before) - len(store), 0)
        return store
    if op == "pop":
        want = before[-1] if before else None
        if (None if returned is None else canonical(returned)) != (
                None if want is None else canonical(want)):
            v.add("pop_wrong", f"{where}: returned "
                               f"{None if returned is None else label(returned)}, expected "
                               f"{None if want is None else label(want)}")
    if _keys(store) != _keys(after):
        dup = sum(1 for k in set(_keys(store)) if _keys(store).count(k) > _keys(after).count(k))
        v.duplicated += dup
        v.lost += max(len(after) - len(store) + dup, 0)
        v.add("returned_but_wrong", f"{where}: returned, and the store holds {len(store)} "
                                    f"items where {len(after)} were due")
    return store


async def run_trial(ctx: TrialContext) -> Trial:
    """One trial: "database is locked" injected into each kind of write at sampled points."""
    with SqliteWatch(ctx.build.root) as watch:
        return await _faults(ctx, watch)


async def _faults(ctx: TrialContext, watch: SqliteWatch) -> Trial:
    """Clean calls count each kind's statements; then a lock is met at each statement of each
    call, and every call is judged on what its caller saw and what the store holds.

    Long (over 80 lines) on purpose: the counts of the clean calls decide where the faults
    land, on one session, so the trial is read top to bottom.
    """
    handle = await ctx.open()
    session = handle.session
    try:
        await read_items(session)  # first use: tables, connections
    except Exception as exc:  # noqa: BLE001 - a backend that fails without any fault
        return Problems([("setup_failed", f"the first read raised {describe(exc)}")],
                        raised=1).trial(ctx, HELD)
    if not watch.opened:
        raise NotApplicable(f"{CHECK_ID} does not apply to {ctx.target.name!r}: "
                            f"{type(session).__name__} opened no SQLite file under the trial's "
                            f"store, so no other connection can hold its lock")
    probe_handle = None if handle.private_store else await ctx.reopen(handle)
    probe = session if probe_handle is None else probe_handle.session
    retries = ctx.target.claims.retries_lock_errors
    tag, serial = f"{ctx.seed:x}", 0

    def batch_of(n: int) -> list[Any]:
        nonlocal serial
        serial += n
        return [{"role": "user", "content": f"{tag} item {serial - n + i}"} for i in range(n)]

    def call(op: str, batch: list[Any]) -> Callable[[], Awaitable[Any]]:
        if op == "add":
            return lambda: session.add_items(batch)
        return session.pop_item if op == "pop" else session.clear_session  # type: ignore[no-any-return]

    v = Problems()
    store = [*batch_of(3)]
    # A clean call of each kind counts its statements.
    spent: dict[str, int] = {}
    try:
        await session.add_items(store)
        for op in OPS:
            batch = batch_of(2)
            start = watch.statements
            answer = await call(op, batch)()
            spent[op] = watch.statements - start
            store = judge_call(op, store, batch, answer, None, False, retries,
                               *(await _reads(session, probe)), v, f"a clean {op}",
                               watch.lock_holder())
            if v.problems:
                return v.trial(ctx, HELD)
        ctx.log("pop_item() on the emptied session  # answers None, keeps no transaction open")
        answer = await session.pop_item()
        store = judge_call("pop", store, [], answer, None, False, retries,
                           *(await _reads(session, probe)), v, "a pop of the emptied session",
                           watch.lock_holder())
        if v.problems:
            return v.trial(ctx, HELD)
    except Exception as exc:  # noqa: BLE001 - a backend that fails without any fault
        v.raised += 1
        v.add("setup_failed", f"a clean call or read raised {describe(exc)}")
        return v.trial(ctx, HELD)
    ctx.log(f"add_items([3 items]); a clean add_items, pop_item and clear_session make "
            f"{spent} statements")
    points = ctx.params["points"]
    for mode, repeats, rollback_fails, ops in MODES:
        for op in ops:
            ks = list(range(1, spent[op] + 1))
            ctx.rng.shuffle(ks)
            for k in sorted(ks[:points]):
                if len(store) < 2:
                    more = batch_of(3)
                    await session.add_items(more)
                    store = [*store, *more]
                batch = batch_of(2)
                where = f"{op} with 'database is locked' at statement {k} ({mode})"
                ctx.log(where)
                watch.arm(k, repeats, rollback_fails)
                returned: Any = None
                raised: BaseException | None = None
                try:
                    returned = await call(op, batch)()
                except Exception as exc:  # noqa: BLE001 - judged below
                    raised = exc
                arming = watch.disarm()
                fired = bool(arming and arming.fired)
                try:
                    locked = watch.lock_holder()
                    now, own = await _reads(session, probe)
                except Exception as exc:  # noqa: BLE001 - a store that cannot be read
                    v.raised += 1
                    v.add("read_raised", f"{where}: the read after it raised {describe(exc)}")
                    return v.trial(ctx, HELD)
                store = judge_call(op, store, batch, returned, raised, fired, retries, now, own,
                                   v, where, locked)
                if v.problems:  # later calls would only wait on what this one left behind
                    return v.trial(ctx, HELD)
    ctx.log("add_items([one more]); get_items()  # the session still works")
    try:
        last = batch_of(1)
        await session.add_items(last)
        store = [*store, *last]
        if _keys(await read_items(probe)) != _keys(store):
            v.add("returned_but_wrong", "the last clean append is not stored as written")
    except Exception as exc:  # noqa: BLE001 - a session left broken
        v.raised += 1
        v.add("poisoned", f"after the faults, a clean add_items or read raised {describe(exc)}")
    return v.trial(ctx, HELD)


async def _reads(session: Any, probe: Any) -> tuple[list[Any], list[Any]]:
    """What a fresh instance reads, and what the session itself reads."""
    store = await read_items(probe)
    return store, store if probe is session else await read_items(session)


CHECK = CheckSpec(
    id=CHECK_ID,
    invariant="a 'database is locked' error on any statement of add_items, pop_item or "
    "clear_session (once, twice, or with its rollback failing) leaves the write all or "
    "nothing, no transaction open and the session usable, and a backend that retries lock "
    "errors lets none reach the caller",
    fault="sqlite3.OperationalError('database is locked') raised by the driver at the k-th "
    "statement or commit of one call (k a seeded sample of the statements a clean call makes), "
    "once, with the rollback after it failing (disk I/O error), or twice in a row (appends); "
    "each call judged through a fresh instance and the session itself",
    params=(
        Param("points", 3, 1, 32, "at most this many fault positions k per call kind and mode"),
        trials_param(2),
    ),
    run_trial=run_trial,
    mutants=(
        "reference_keeps_failed_transaction",
    ),
    generated=(
        Selector("sqlite-file", "SQLiteSession._write_connection", "drop_rollback"),
        Selector("sqlalchemy-sqlite-file", "SQLAlchemySession.add_items", "call_without_retry"),
    ),
    timeout_s=60.0,
)
