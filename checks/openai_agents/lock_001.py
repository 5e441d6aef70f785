"""ARIB-LOCK-001: a session opened on a store another connection is writing waits its turn.

A store file is often created or written by someone else first: another process of the same
application, a migration, an older version using SQLite's default rollback journal. While that
connection holds the write lock, a new session's first use must wait (SQLite's busy timeout is
5 s) and then work. One step of opening does not wait by itself: switching the file to WAL
(``PRAGMA journal_mode=WAL``, which every SDK SQLite backend runs on a new connection) fails
at once with "database is locked" while another connection holds a RESERVED lock, so a
backend must retry it (SQLiteSession and AsyncSQLiteSession do, until their busy timeout).

A trial learns which file under its root the backend stores in (a scout instance on a scratch
root, its connections read by ``arib.checks.openai_agents._sqlite_faults.SqliteWatch``; a store that
is not a SQLite file, in memory or on a server, makes the check abstain: no other connection can
lock it). Then another connection, in a thread of its own, creates that file in rollback-journal
mode and holds its write lock (``BEGIN IMMEDIATE``) for ``hold_ms``, while a session is opened
on it and appends a batch and reads. Every call must succeed, and the read show the batch
exactly once; a call that raises (a lock error that reached the caller) is the violation.
"""

from __future__ import annotations

import dataclasses
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread

from arib.checks.base import CheckSpec, NotApplicable, Param, Selector, TrialContext, describe
from arib.checks.common import canonical, first_differences, read_items, tally, trials_param
from arib.checks.openai_agents._sqlite_faults import SqliteWatch
from arib.ground.model import Counts, Trial

CHECK_ID = "ARIB-LOCK-001"


async def store_file(ctx: TrialContext) -> str:
    """The name of the file, under a trial root, that the backend keeps its store in: read
    from the connections a scout instance on a scratch root opens."""
    scratch = ctx.build.root / "scout"
    scratch.mkdir()
    build = dataclasses.replace(ctx.build, root=scratch, session_id=ctx.build.session_id + "-s")
    with SqliteWatch(scratch) as watch:
        handle = await ctx.target.build(build)
        try:
            await read_items(handle.session)  # a lazy backend connects at first use
        except Exception:  # noqa: BLE001, S110 - only the connections it opened matter here
            pass
        finally:
            await handle.dispose()
    files = [Path(p) for p in dict.fromkeys(watch.opened)]
    if not files:
        raise NotApplicable(f"{CHECK_ID} does not apply to {ctx.target.name!r}: its backend "
                            f"opened no SQLite file under the trial's root, so no other "
                            f"connection can lock its store")
    return str(files[0].resolve().relative_to(scratch.resolve()))


class Holder:
    """Another connection that creates the store in rollback-journal mode and holds its write
    lock for ``hold_s`` seconds, in a thread of its own."""

    def __init__(self, path: Path, hold_s: float) -> None:
        self.path, self.hold_s = path, hold_s
        self.locked = threading.Event()
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, name="arib-lock-holder", daemon=True)

    def _run(self) -> None:
        try:
            conn = sqlite3.connect(str(self.path), isolation_level=None, check_same_thread=False)
            try:
                conn.execute("CREATE TABLE IF NOT EXISTS arib_lock_holder (n INTEGER)")
                conn.execute("BEGIN IMMEDIATE")
                conn.execute("INSERT INTO arib_lock_holder VALUES (1)")
                self.locked.set()
                time.sleep(self.hold_s)
                conn.execute("COMMIT")
            finally:
                conn.close()
        except BaseException as exc:  # noqa: BLE001 - reported by the trial
            self.error = exc
        finally:
            self.locked.set()

    async def __aenter__(self) -> Holder:
        self.thread.start()
        await anyio.to_thread.run_sync(self.locked.wait, 10.0)
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await anyio.to_thread.run_sync(self.thread.join, 10.0)


async def run_trial(ctx: TrialContext) -> Trial:
    """One trial: a new session appends and reads while another connection holds the lock."""
    name = await store_file(ctx)
    hold_s = ctx.params["hold_ms"] / 1000
    tag = f"{ctx.seed:016x}"
    batch = [{"role": "user" if i % 2 == 0 else "assistant", "content": f"{tag} {i}"}
             for i in range(ctx.rng.randint(1, 4))]
    ctx.log(f"another connection creates {name} in rollback-journal mode and holds its write "
            f"lock (BEGIN IMMEDIATE) for {ctx.params['hold_ms']} ms; meanwhile: open a "
            f"session, add_items([{len(batch)} items]), get_items()")
    seen: list[Any] = []
    problem: str | None = None
    started = time.monotonic()
    async with Holder(ctx.build.root / name, hold_s) as holder:
        if holder.error is not None:
            raise RuntimeError(f"the lock holder could not lock the store: {holder.error!r}")
        try:
            handle = await ctx.open()
            await handle.session.add_items(batch)
            seen = await read_items(handle.session)
        except Exception as exc:  # noqa: BLE001 - the lock error reached the caller
            problem = f"{describe(exc)} after {time.monotonic() - started:.2f}s"
    ctx.log(f"the session's calls returned after {time.monotonic() - started:.2f}s")
    if problem is not None:
        return Trial(ctx.index, ctx.seed, True, Counts(lost=len(batch), raised=1),
                     mode="lock_error_escaped", sample=f"opening or first use raised {problem}",
                     ops=tuple(ctx.ops))
    try:
        counts = tally(batch, seen)
    except (TypeError, ValueError) as exc:
        return Trial(ctx.index, ctx.seed, True, Counts(wrong_result=1), mode="not_an_item",
                     sample=f"a read returned a value that is not a JSON item: {describe(exc)}",
                     ops=tuple(ctx.ops))
    ordered = [canonical(i) for i in seen] == [canonical(i) for i in batch]
    return Trial(ctx.index, ctx.seed, counts.total > 0 or not ordered, counts,
                 mode="waited" if ordered else ("lossy" if counts.total else "reordered"),
                 sample=first_differences(batch, seen) or None, ops=tuple(ctx.ops))


CHECK = CheckSpec(
    id=CHECK_ID,
    invariant="a session opened on a store that another connection holds write-locked for "
    "less than the busy timeout waits for it: its first calls succeed and store exactly what "
    "they were given, and no lock error reaches the caller",
    fault="another connection creates the store file in rollback-journal mode and holds its "
    "write lock (BEGIN IMMEDIATE) for hold_ms while a session is opened on it, appends a "
    "batch and reads",
    params=(
        Param("hold_ms", 250, 20, 4000, "how long the other connection holds the lock (ms)"),
        trials_param(2),
    ),
    run_trial=run_trial,
    mutants=(
        "reference_open_gives_up_on_lock",
    ),
    generated=(
        Selector("sqlite-file", "SQLiteSession._configure_connection", "flip_comparison"),
        Selector("async-sqlite-file", "AsyncSQLiteSession._configure_connection",
                 "flip_comparison"),
        Selector("reference", "_retry_busy", "single_attempt_loop"),
    ),
    timeout_s=60.0,
)
