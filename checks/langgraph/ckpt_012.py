"""ARIB-CKPT-012: a saver serves every operation on the store as a deployment finds it: a fresh
store, whatever operation comes first, and a SQLite store written by an older release.

A worker's first call on a new database is not always a put: a server answers ``get_state``
of an unknown thread, lists a thread's history, records a task's writes before its
checkpoint's put lands (runs save writes in the background), or rebuilds a DeltaChannel (a
delete as the first call is ARIB-CKPT-013's). A saver that makes its tables lazily on some
paths only fails those first calls ("no such table"). And a database written by an older
release is opened by a newer one after an upgrade: langgraph-checkpoint-sqlite before 3.1.2
made its writes table without the ``task_path`` column, which the newer ``setup()`` adds (its
documented migration); a saver that does not migrate fails every ``put_writes`` there, or
misreads the old rows.

Part one, on every lane, each on a store of its own (``open_with(root=...)``): ``get_tuple``,
``list``, ``put_writes`` (then the put of its checkpoint: the writes are the checkpoint's),
``get_delta_channel_history`` (where the release has it) and ``put`` as the very first call;
each answers as on an empty store, and the store then holds exactly what was put. Part two,
where the saver keeps its store in a SQLite connection the application passed
(``saver.conn``): before the saver's first call, the connection gets the tables of
langgraph-checkpoint-sqlite 1.0 (writes without ``task_path``) with a checkpoint of format v1
and its writes as that release stored them (JSON); the saver must read them back exactly
(listed as got), take new writes on the old checkpoint (ordered after the old ones, which have
no task path), and a child checkpoint. Part three, where the saver takes an aiosqlite
connection: the saver made on a connection the application has not started
(``aiosqlite.connect(path)`` not awaited, which AsyncSqliteSaver's ``setup()`` starts itself;
langgraph issue 6583: with aiosqlite 0.22 that start failed on every call) serves a put and
a read. Part four, on a PostgreSQL lane: the lane's saver class made on a psycopg_pool pool
(``ConnectionPool``, ``AsyncConnectionPool`` for the async savers), as their constructors
document (``conn: Connection | ConnectionPool``), serves a put and a read. Elsewhere parts
two to four are skipped, naming why.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import sqlite3
from dataclasses import replace
from typing import Any

import anyio

from arib.checks.base import CheckSpec, Selector, TrialContext
from arib.checks.common import trials_param
from arib.checks.langgraph._contract import Problems, guarded, ids_of, put_one, same_as_got
from arib.checks.langgraph._fresh import fresh_saver
from arib.checks.langgraph._halves import offers, task_paths
from arib.checks.langgraph._saver import (
    call,
    checkpoint_id,
    config,
    listing,
    make_checkpoint,
    writes_of,
)
from arib.ground.model import Trial
from arib.targets.langgraph.lanes import api_of, is_async, latest_only
from arib.targets.langgraph.services import saver_on_pool

# The tables of langgraph-checkpoint-sqlite 1.0 (its setup(); no task_path column yet).
OLD_SCHEMA = """
CREATE TABLE IF NOT EXISTS checkpoints (
    thread_id TEXT NOT NULL, checkpoint_ns TEXT NOT NULL DEFAULT '',
    checkpoint_id TEXT NOT NULL, parent_checkpoint_id TEXT, type TEXT,
    checkpoint BLOB, metadata BLOB,
    PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id));
CREATE TABLE IF NOT EXISTS writes (
    thread_id TEXT NOT NULL, checkpoint_ns TEXT NOT NULL DEFAULT '',
    checkpoint_id TEXT NOT NULL, task_id TEXT NOT NULL, idx INTEGER NOT NULL,
    channel TEXT NOT NULL, type TEXT, value BLOB,
    PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id, task_id, idx));
"""
OLD_CHECKPOINT_SQL = "INSERT INTO checkpoints VALUES (?, ?, ?, ?, ?, ?, ?)"
OLD_WRITE_SQL = "INSERT INTO writes VALUES (?, ?, ?, ?, ?, ?, ?, ?)"


async def run_trial(ctx: TrialContext) -> Trial:
    return await guarded(ctx, lambda: _trial(ctx))


async def _first_calls(ctx: TrialContext, problems: Problems) -> None:
    thread = f"t-{ctx.seed:x}"
    first = checkpoint_id(ctx.seed, 0)
    async with fresh_saver(ctx, "first-get_tuple") as saver:
        problems.expect("get_tuple as the first call", None,
                        await call(saver, "get_tuple", config(thread)))
        delta = offers(saver, "get_delta_channel_history")
    async with fresh_saver(ctx, "first-list") as saver:
        problems.expect("list as the first call", [],
                        ids_of(await listing(saver, config(thread))))
    if delta:
        async with fresh_saver(ctx, "first-get_delta_channel_history") as saver:
            got = await call(saver, "get_delta_channel_history",
                             config=config(thread, "", first), channels=["v"])
            problems.expect("get_delta_channel_history as the first call",
                            {"v": {"writes": []}}, {k: dict(v) for k, v in dict(got).items()})
    async with fresh_saver(ctx, "first-put_writes") as saver:
        ctx.log(f"put_writes task-early on {first} before its checkpoint is put")
        await call(saver, "put_writes", config(thread, "", first), [("v", "early")],
                   "task-early")
        await put_one(ctx, saver, thread, "", 0, {"v": 0}, {"step": 0}, history=False)
        got = await call(saver, "get_tuple", config(thread, "", first))
        problems.expect("writes put as the first call, once their checkpoint is put",
                        [("task-early", "v", "early")], None if got is None else writes_of(got),
                        kind="lost")
    async with fresh_saver(ctx, "first-put") as saver:
        await put_one(ctx, saver, thread, "", 0, {"v": 0}, {"step": 0}, history=False)
        problems.expect("list after put as the first call", [first],
                        ids_of(await listing(saver, config(thread, ""))), kind="lost")


async def _make_old_store(ctx: TrialContext, saver: Any, rows: list[tuple[str, tuple[Any, ...]]]
                          ) -> str | None:
    """The old tables and rows through the application's connection; why not, or None."""
    conn: Any = getattr(saver, "conn", None)
    if isinstance(conn, sqlite3.Connection):
        conn.executescript(OLD_SCHEMA)
        for sql, row in rows:
            conn.execute(sql, row)
        conn.commit()
        return None
    if _aiosqlite_connection(conn) is not None:
        await conn.executescript(OLD_SCHEMA)
        for sql, row in rows:
            await conn.execute(sql, row)
        await conn.commit()
        return None
    return (f"{type(saver).__name__} keeps no SQLite connection of the application's "
            f"(conn is {type(conn).__name__}): no store of an older release to open")


async def _older_release(ctx: TrialContext, problems: Problems) -> None:
    async with fresh_saver(ctx, "older-release") as saver:
        await _older_release_on(ctx, saver, problems)


async def _older_release_on(ctx: TrialContext, saver: Any, problems: Problems) -> None:
    thread = f"old-{ctx.seed:x}"
    old_id = checkpoint_id(ctx.seed, 0, writer=7)
    old = {"v": 1, "id": old_id, "ts": "2024-07-01T00:00:00+00:00",
           "channel_values": {"messages": ["hi", "there"], "count": 2},
           "channel_versions": {"messages": 2, "count": 1},
           "versions_seen": {"node": {"messages": 1}}, "pending_sends": []}
    meta = {"source": "loop", "step": 1, "writes": None}
    old_writes = [("task-old", 0, "messages", ["again"]), ("task-old", 1, "count", 3),
                  ("task-aaa", 0, "messages", ["first"])]
    rows: list[tuple[str, tuple[Any, ...]]] = [
        (OLD_CHECKPOINT_SQL, (thread, "", old_id, None, "json", json.dumps(old).encode(),
                              json.dumps(meta).encode()))]
    rows += [(OLD_WRITE_SQL, (thread, "", old_id, task, idx, ch, "json",
                              json.dumps(value).encode())) for task, idx, ch, value in old_writes]
    skipped = await _make_old_store(ctx, saver, rows)
    if skipped:
        ctx.log(f"no older release's store here: {skipped}")
        return
    ctx.log(f"made the tables of langgraph-checkpoint-sqlite 1.0 with {old_id} and 3 writes")
    got = await call(saver, "get_tuple", config(thread))
    if got is None:
        problems.add("lost", f"{old_id} of the older release's store is not found")
        return
    problems.expect(f"{old_id} (format v1) as the older release stored it", old, got.checkpoint)
    problems.expect(f"metadata of {old_id}", meta, dict(got.metadata or {}))
    old_order = [(t, ch, v) for t, _, ch, v in sorted(old_writes, key=lambda w: (w[0], w[1]))]
    problems.expect(f"writes of {old_id}, by (task_id, idx)", old_order, writes_of(got))
    paths = task_paths()
    new_writes = [("messages", ["new"])]
    ctx.log(f"put_writes task-new on the old {old_id}")
    args = (new_writes, "task-new", "~new") if paths else (new_writes, "task-new")
    await call(saver, "put_writes", config(thread, "", old_id), *args)
    again = await call(saver, "get_tuple", config(thread, "", old_id))
    # the old rows have no task path (''): where paths order writes, the new one comes last;
    # before that, (task_id, idx) puts task-new between task-aaa and task-old
    every = [("", t, i, ch, v) for t, i, ch, v in old_writes]
    every.append(("~new" if paths else "", "task-new", 0, "messages", ["new"]))
    problems.expect(f"writes of {old_id} after a new write",
                    [(t, ch, v) for _, t, _, ch, v in sorted(every, key=lambda w: w[:3])],
                    None if again is None else writes_of(again))
    if latest_only(saver):
        return
    cp, versions = make_checkpoint(saver, ctx.seed, 1, {"count": 4}, old)
    ctx.log(f"put {cp['id']}, child of the old {old_id}")
    await call(saver, "put", config(thread, "", old_id), cp, {"step": 2}, versions)
    listed = await listing(saver, config(thread, ""))
    problems.expect("list of the thread after a child of the old checkpoint",
                    [cp["id"], old_id], ids_of(listed))
    for item in listed:
        await same_as_got(ctx, saver, problems, "list of the older release's thread", item)


def _aiosqlite_connection(conn: Any) -> Any:
    """The aiosqlite module when ``conn`` is one of its connections, else None."""
    try:
        import aiosqlite
    except ImportError:
        return None
    return aiosqlite if isinstance(conn, aiosqlite.Connection) else None


async def _unstarted_connection(ctx: TrialContext, problems: Problems) -> None:
    async with fresh_saver(ctx, "lane-class") as lane_saver:
        cls = type(lane_saver)
        aiosqlite = _aiosqlite_connection(getattr(lane_saver, "conn", None))
        if aiosqlite is None:
            ctx.log(f"{cls.__name__} takes no aiosqlite connection: no unstarted connection "
                    f"to give it")
            return
        async with lane_saver.conn.execute("PRAGMA database_list") as cur:
            on_file = any(row[2] for row in await cur.fetchall())
    target = str(ctx.build.root / "unstarted.db") if on_file else ":memory:"
    ctx.log(f"{cls.__name__}(aiosqlite.connect({target!r})), the connection not awaited: the "
            f"saver starts it")
    conn = aiosqlite.connect(target)
    try:
        saver = cls(conn)
        thread = f"unstarted-{ctx.seed:x}"
        put = await put_one(ctx, saver, thread, "", 0, {"v": 0}, {"step": 0}, history=False)
        got = await call(saver, "get_tuple", config(thread))
        problems.expect("latest on a saver given an unstarted connection", put.id,
                        None if got is None else got.checkpoint["id"], kind="lost")
    finally:
        with contextlib.suppress(Exception):
            with anyio.fail_after(5):
                await conn.close()


async def _on_a_pool(ctx: TrialContext, problems: Problems) -> None:
    if ctx.target.service != "postgres":
        ctx.log(f"lane {ctx.target.name!r} is no PostgreSQL lane: no connection pool to give "
                f"its saver")
        return
    async with fresh_saver(ctx, "pool-lane-class") as lane_saver:
        cls, served = type(lane_saver), api_of(lane_saver)
    if importlib.util.find_spec("psycopg_pool") is None:
        ctx.log("psycopg_pool is not installed: no connection pool to give the saver")
        return
    root = ctx.build.root / "pool"
    root.mkdir(parents=True, exist_ok=True)
    kind = "AsyncConnectionPool" if is_async(served) else "ConnectionPool"
    ctx.log(f"{cls.__name__} made on a psycopg_pool {kind}, its setup() run")
    async with saver_on_pool(replace(ctx.build, root=root), ctx.target.name, cls,
                             is_async=is_async(served)) as saver:
        thread = f"pool-{ctx.seed:x}"
        put = await put_one(ctx, saver, thread, "", 0, {"v": [0]}, {"step": 0}, history=False)
        got = await call(saver, "get_tuple", config(thread))
        problems.expect(f"latest on {cls.__name__} made on a {kind}", put.id,
                        None if got is None else got.checkpoint["id"], kind="lost")


async def _trial(ctx: TrialContext) -> Trial:
    problems = Problems()
    await _first_calls(ctx, problems)
    await _older_release(ctx, problems)
    await _unstarted_connection(ctx, problems)
    await _on_a_pool(ctx, problems)
    return problems.trial(ctx, "served_from_the_start")


CHECK = CheckSpec(
    id="ARIB-CKPT-012",
    invariant="a saver serves every operation as the first call on a fresh store, reads and "
              "extends a SQLite store written by an older release (writes without task_path), "
              "starts an aiosqlite connection given unstarted, and works on a connection pool",
    fault="get_tuple, list, put_writes, get_delta_channel_history and put each as the first "
          "call on a store of its own; the tables and rows of langgraph-checkpoint-sqlite 1.0 "
          "under the application's connection; an aiosqlite connection not started; a "
          "psycopg_pool pool",
    params=(trials_param(1),),
    run_trial=run_trial,
    mutants=("lg_api_reference_tables_on_first_write",
             "lg_api_async_sqlite_setup_skips_migration"),
    generated=(
        Selector("lg-async-sqlite-file", "AsyncSqliteSaver.alist", "drop_await"),
        Selector("lg-async-sqlite-file", "_ensure_connected", "early_return"),
        Selector("lg-shallow-postgres", "ShallowPostgresSaver.__init__", "flip_comparison"),
    ),
    timeout_s=30.0,
)
