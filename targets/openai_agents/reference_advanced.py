"""Conversation branches, usage and turns for the reference backend (the advanced API).

``with_branches`` installs ``BranchingMixin`` into ``ReferenceSession``: the class keeps its
own ``get_items`` / ``add_items`` / ``pop_item`` / ``clear_session`` as the operations of the
``main`` branch (stored where they always were; its ``close`` waits for the operations already
called), and gains the API of openai-agents'
``AdvancedSQLiteSession``: ``create_branch_from_turn``, ``create_branch_from_content``,
``switch_to_branch``, ``delete_branch``, ``list_branches``, branch-aware reads and writes,
``store_run_usage``, ``get_session_usage``, ``get_turn_usage``, ``get_tool_usage``,
``get_conversation_turns``, ``find_turns_by_content`` and ``get_conversation_by_turns``.

The model, kept simple on purpose:
- A branch is a list of items. ``main`` always exists; a created branch exists from its
  creation (also while it holds no items) until it is deleted or the session is cleared. Each
  instance has its own current branch, ``main`` when opened. A branch id, once used, is never
  used again in the session (``main`` is always taken).
- Turns, anchors, message types and tool names are computed from the items on every read
  (``arib.targets.openai_agents.reference_turns``), so they cannot drift from the items.
- Usage is stored per (branch, turn) with the turn's anchor (the row of its first item) at
  the time it was stored; it is reported only while that anchor is still the first item of
  that turn, so a turn emptied by pops, a deleted branch or a clear stops being reported.
- One FIFO lock per instance (``_adv_lock``, taken before the first suspension) runs the
  instance's operations in the order they were called; add_items, pop_item and
  store_run_usage act on the branch that was current when they were called, unless the
  session was cleared meanwhile (every instance is back on ``main`` after a clear).
- Every check-then-act is one SQLite transaction through the class's ``_transact`` (busy
  retries, durable commits). ``clear_session`` is two transactions: ``main`` through the
  class's own clear first, then branches, usage and the clear generation; an instance's later
  operations never see the state between them, another instance's reads may.
- While an instance is on ``main``, its protocol operations are the class's own, unchanged
  (so every invariant of the class, and every defect of it, shows exactly as before).
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Callable
from typing import Any, TypeVar

import anyio

from arib.targets.openai_agents import reference_turns as turns

T = TypeVar("T")
MAIN = "main"
PROTOCOL = ("get_items", "add_items", "pop_item", "clear_session", "close")
USAGE_FIELDS = ("requests", "input_tokens", "output_tokens", "total_tokens")
SCHEMA = (
    "CREATE TABLE IF NOT EXISTS adv_branches (session_id TEXT NOT NULL, branch_id TEXT NOT "
    "NULL, live INTEGER NOT NULL, created_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP, "
    "PRIMARY KEY (session_id, branch_id))",
    "CREATE TABLE IF NOT EXISTS adv_items (seq INTEGER PRIMARY KEY AUTOINCREMENT, session_id "
    "TEXT NOT NULL, branch_id TEXT NOT NULL, item_key TEXT, body TEXT NOT NULL, created_at "
    "TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP, UNIQUE (session_id, branch_id, item_key))",
    "CREATE TABLE IF NOT EXISTS adv_usage (session_id TEXT NOT NULL, branch_id TEXT NOT NULL, "
    "turn INTEGER NOT NULL, anchor INTEGER NOT NULL, requests INTEGER NOT NULL, input_tokens "
    "INTEGER NOT NULL, output_tokens INTEGER NOT NULL, total_tokens INTEGER NOT NULL, "
    "input_details TEXT, output_details TEXT, PRIMARY KEY (session_id, branch_id, turn))",
    "CREATE TABLE IF NOT EXISTS adv_generations (session_id TEXT PRIMARY KEY, generation "
    "INTEGER NOT NULL)",
)


class _Main:
    """Returned by a branch operation that found the session cleared: act on ``main``."""


REDIRECT = _Main()


def _details(value: Any) -> str | None:
    """Token details as JSON (a pydantic model's fields, or a plain object's)."""
    if not value:
        return None
    fields = value.model_dump() if hasattr(value, "model_dump") else dict(vars(value))
    return json.dumps(fields)


class BranchingMixin:
    """The advanced API over a class with ``_transact``, ``_lock``, ``_window`` and
    ``_main_<op>`` (its own protocol operations, saved by ``with_branches``)."""

    session_id: str
    _lock: Any
    _conn: sqlite3.Connection | None
    _transact: Callable[..., Any]
    _key: Callable[[Any], str | None]
    _window: Callable[[int | None], int | None]
    _main_get_items: Callable[..., Any]
    _main_add_items: Callable[..., Any]
    _main_pop_item: Callable[..., Any]
    _main_clear_session: Callable[..., Any]
    _main_close: Callable[..., Any]
    _adv_lock: Any
    _adv_state: tuple[str, int | None]
    _adv_ready: bool

    def _adv_init(self) -> None:
        self._adv_lock = anyio.Lock(fast_acquire=True)
        self._adv_ready = False
        # The clear generation as the instance opens (None if it cannot be read now: then
        # the first operation adopts the durable one).
        self._adv_state = (MAIN, None)
        try:
            if self._conn is not None and self._conn.execute(
                    "SELECT 1 FROM sqlite_master WHERE name = 'adv_generations'").fetchone():
                row = self._conn.execute("SELECT generation FROM adv_generations WHERE "
                                         "session_id = ?", (self.session_id,)).fetchone()
                self._adv_state = (MAIN, row[0] if row else 0)
            else:
                self._adv_state = (MAIN, 0)
        except sqlite3.OperationalError:
            pass

    # --- storage ---------------------------------------------------------------------------

    async def _adv_run(self, work: Callable[[sqlite3.Connection], T], write: bool) -> T:
        """``work`` in one transaction under the class lock (the schema made on first use)."""
        async with self._lock:
            if not self._adv_ready:
                await self._transact(lambda conn: [conn.execute(s) for s in SCHEMA], True)
                self._adv_ready = True
            return await self._transact(work, write)  # type: ignore[no-any-return]

    def _adv_rows(self, conn: sqlite3.Connection, branch: str) -> tuple[list[int], list[Any],
                                                                     list[str | None]]:
        """A branch's row ids, items and write times, oldest first."""
        if branch == MAIN:
            rows = conn.execute("SELECT seq, body, NULL FROM items WHERE session_id = ? "
                                "ORDER BY seq", (self.session_id,)).fetchall()
        else:
            rows = conn.execute("SELECT seq, body, created_at FROM adv_items WHERE session_id "
                                "= ? AND branch_id = ? ORDER BY seq",
                                (self.session_id, branch)).fetchall()
        return [r[0] for r in rows], [json.loads(r[1]) for r in rows], [r[2] for r in rows]

    def _adv_exists(self, conn: sqlite3.Connection, branch: str) -> bool:
        return branch == MAIN or conn.execute(
            "SELECT 1 FROM adv_branches WHERE session_id = ? AND branch_id = ? AND live = 1",
            (self.session_id, branch)).fetchone() is not None

    def _adv_refresh(self, conn: sqlite3.Connection) -> str:
        """The current branch, back to ``main`` if the session was cleared meanwhile."""
        row = conn.execute("SELECT generation FROM adv_generations WHERE session_id = ?",
                           (self.session_id,)).fetchone()
        durable = row[0] if row else 0
        if self._adv_state[1] != durable:
            self._adv_state = (MAIN, durable)
        return self._adv_state[0]

    def _adv_moved_on(self, conn: sqlite3.Connection, generation: int | None) -> bool:
        """True when the session was cleared since ``generation`` was current."""
        self._adv_refresh(conn)
        return self._adv_state[1] != generation

    def _adv_append(self, conn: sqlite3.Connection, branch: str, items: list[Any]) -> None:
        conn.executemany(
            "INSERT OR IGNORE INTO adv_items (session_id, branch_id, item_key, body) "
            "VALUES (?, ?, ?, ?)",
            [(self.session_id, branch, self._key(item), json.dumps(item)) for item in items])

    # --- the session protocol, branch-aware ------------------------------------------------

    async def get_items(self, limit: int | None = None,
                        branch_id: str | None = None) -> list[Any]:
        """The latest ``limit`` items of a branch (the current one when None), oldest first."""
        async with self._adv_lock:
            def read(conn: sqlite3.Connection) -> list[Any] | _Main:
                branch = self._adv_refresh(conn) if branch_id is None else branch_id
                return REDIRECT if branch == MAIN else self._adv_rows(conn, branch)[1]

            # On main (a clear only ever moves an instance to main) the class's own read
            # answers alone.
            on_main = (branch_id or self._adv_state[0]) == MAIN
            found = REDIRECT if on_main else await self._adv_run(read, write=False)
            if isinstance(found, _Main):
                return await self._main_get_items(limit)  # type: ignore[no-any-return]
        return turns.window(found, self._window(limit))

    async def add_items(self, items: list[Any]) -> None:
        """Append items to the branch that is current now (``main`` if cleared meanwhile)."""
        branch, generation = self._adv_state
        async with self._adv_lock:
            if branch != MAIN:
                def append(conn: sqlite3.Connection) -> _Main | None:
                    if self._adv_moved_on(conn, generation):
                        return REDIRECT
                    if not self._adv_exists(conn, branch):
                        raise ValueError(f"Branch {branch!r} was deleted; switch branches")
                    self._adv_append(conn, branch, items)
                    return None

                if await self._adv_run(append, write=True) is None:
                    return
            await self._main_add_items(items)

    async def pop_item(self) -> Any | None:
        """Remove and return the newest item of the branch that is current now."""
        branch, generation = self._adv_state
        async with self._adv_lock:
            if branch != MAIN:
                def pop(conn: sqlite3.Connection) -> Any:
                    if self._adv_moved_on(conn, generation):
                        return REDIRECT
                    row = conn.execute(
                        "SELECT seq, body FROM adv_items WHERE session_id = ? AND branch_id = ? "
                        "ORDER BY seq DESC LIMIT 1", (self.session_id, branch)).fetchone()
                    if row is None:
                        return None
                    conn.execute("DELETE FROM adv_items WHERE seq = ?", (row[0],))
                    return json.loads(row[1])

                popped = await self._adv_run(pop, write=True)
                if not isinstance(popped, _Main):
                    return popped
            return await self._main_pop_item()

    async def clear_session(self) -> None:
        """Remove every branch, item and usage of the session; every instance is on main.

        The class's own clear goes first and decides how a closed session answers."""
        async with self._adv_lock:
            def clear(conn: sqlite3.Connection) -> int:
                for table in ("adv_items", "adv_usage"):
                    conn.execute(f"DELETE FROM {table} WHERE session_id = ?", (self.session_id,))
                conn.execute("UPDATE adv_branches SET live = 0 WHERE session_id = ?",
                             (self.session_id,))
                conn.execute("INSERT INTO adv_generations VALUES (?, 1) ON CONFLICT "
                             "(session_id) DO UPDATE SET generation = generation + 1",
                             (self.session_id,))
                self._adv_refresh(conn)
                return 0

            await self._main_clear_session()
            if not getattr(self, "_closed", False):
                await self._adv_run(clear, write=True)

    async def close(self) -> None:
        """Close after the operations already called (queued on ``_adv_lock``) have run, so
        a call in flight when close() is called completes (ARIB-DRAIN-001)."""
        async with self._adv_lock:
            await self._main_close()

    # --- branches --------------------------------------------------------------------------

    async def create_branch_from_turn(self, turn_number: int,
                                      branch_name: str | None = None) -> str:
        """A new branch holding the current branch's turns before ``turn_number``; it becomes
        current. ValueError for a blank or used name, or a turn without a user message."""
        if branch_name is not None and not branch_name.strip():
            raise ValueError("Branch name cannot be empty")
        async with self._adv_lock:
            def create(conn: sqlite3.Connection) -> tuple[str, int | None]:
                source = self._adv_refresh(conn)
                _, items, _ = self._adv_rows(conn, source)
                numbers = turns.turn_numbers(items)
                if not any(turns.is_user(i) and t == turn_number
                           for i, t in zip(items, numbers, strict=True)):
                    raise ValueError(f"Turn {turn_number} does not contain a user message in "
                                     f"branch {source!r}")
                name = branch_name if branch_name is not None else self._adv_free_name(
                    conn, turn_number)
                if name == MAIN or conn.execute(
                        "SELECT 1 FROM adv_branches WHERE session_id = ? AND branch_id = ?",
                        (self.session_id, name)).fetchone():
                    raise ValueError(f"Branch ID {name!r} has already been used")
                conn.execute("INSERT INTO adv_branches (session_id, branch_id, live) "
                             "VALUES (?, ?, 1)", (self.session_id, name))
                self._adv_append(conn, name, [i for i, t in zip(items, numbers, strict=True)
                                          if t < turn_number])
                return name, self._adv_state[1]

            self._adv_state = await self._adv_run(create, write=True)
            return self._adv_state[0]

    def _adv_free_name(self, conn: sqlite3.Connection, turn_number: int) -> str:
        base = f"branch_from_turn_{turn_number}_{int(time.time())}"
        name, suffix = base, 1
        while conn.execute("SELECT 1 FROM adv_branches WHERE session_id = ? AND branch_id = ?",
                           (self.session_id, name)).fetchone():
            suffix += 1
            name = f"{base}_{suffix}"
        return name

    async def create_branch_from_content(self, search_term: str,
                                         branch_name: str | None = None) -> str:
        """A branch from the first user turn whose text contains ``search_term``."""
        found = await self.find_turns_by_content(search_term)
        if not found:
            raise ValueError(f"No user turns found containing {search_term!r}")
        return await self.create_branch_from_turn(found[0]["turn"], branch_name)

    async def switch_to_branch(self, branch_id: str) -> None:
        """Make ``branch_id`` current; ValueError when no such branch exists."""
        async with self._adv_lock:
            def switch(conn: sqlite3.Connection) -> tuple[str, int | None]:
                self._adv_refresh(conn)
                if not self._adv_exists(conn, branch_id):
                    raise ValueError(f"Branch {branch_id!r} does not exist")
                return branch_id, self._adv_state[1]

            self._adv_state = await self._adv_run(switch, write=False)

    async def delete_branch(self, branch_id: str, force: bool = False) -> None:
        """Delete a branch, its items and usage; its id stays used. ValueError for ``main``,
        an unknown branch, or the current branch without ``force`` (with it: back to main)."""
        if not branch_id or not branch_id.strip():
            raise ValueError("Branch ID cannot be empty")
        if branch_id == MAIN:
            raise ValueError("Cannot delete the 'main' branch")
        async with self._adv_lock:
            def delete(conn: sqlite3.Connection) -> tuple[str, int | None]:
                current = self._adv_refresh(conn)
                if branch_id == current and not force:
                    raise ValueError(f"Cannot delete current branch {branch_id!r}")
                if not self._adv_exists(conn, branch_id):
                    raise ValueError(f"Branch {branch_id!r} does not exist")
                for table in ("adv_items", "adv_usage"):
                    conn.execute(f"DELETE FROM {table} WHERE session_id = ? AND branch_id = ?",
                                 (self.session_id, branch_id))
                conn.execute("UPDATE adv_branches SET live = 0 WHERE session_id = ? AND "
                             "branch_id = ?", (self.session_id, branch_id))
                return (MAIN if current == branch_id else current), self._adv_state[1]

            self._adv_state = await self._adv_run(delete, write=True)

    async def list_branches(self) -> list[dict[str, Any]]:
        """Every branch: id, message and user-turn counts, whether current, creation time."""
        def listing(conn: sqlite3.Connection) -> list[dict[str, Any]]:
            current = self._adv_refresh(conn)
            named = conn.execute("SELECT branch_id, created_at FROM adv_branches WHERE "
                                 "session_id = ? AND live = 1 ORDER BY rowid",
                                 (self.session_id,)).fetchall()
            found = []
            for branch, created in [(MAIN, None), *named]:
                _, items, _ = self._adv_rows(conn, branch)
                found.append({"branch_id": branch, "message_count": len(items),
                              "user_turns": sum(map(turns.is_user, items)),
                              "is_current": branch == current, "created_at": created})
            return found

        async with self._adv_lock:
            return await self._adv_run(listing, write=False)

    # --- turns and search ------------------------------------------------------------------

    async def _adv_read(self, branch_id: str | None, view: Callable[[list[int], list[Any],
                           list[str | None]], T]) -> T:
        async with self._adv_lock:
            def read(conn: sqlite3.Connection) -> T:
                branch = self._adv_refresh(conn) if branch_id is None else branch_id
                return view(*self._adv_rows(conn, branch))

            return await self._adv_run(read, write=False)

    async def get_conversation_turns(self, branch_id: str | None = None) -> list[dict[str, Any]]:
        """The user turns of a branch: turn, preview, full content, time, can_branch."""
        return await self._adv_read(branch_id, lambda _, i, s: turns.user_turns(i, s))

    async def find_turns_by_content(self, search_term: str,
                                    branch_id: str | None = None) -> list[dict[str, Any]]:
        """The user turns whose text contains ``search_term`` (ASCII case-insensitive)."""
        return await self._adv_read(branch_id,
                                       lambda _, i, s: turns.user_turns(i, s, search_term))

    async def get_conversation_by_turns(
            self, branch_id: str | None = None) -> dict[int, list[dict[str, str | None]]]:
        """Every item's type and tool name, grouped by turn."""
        return await self._adv_read(branch_id, lambda _, i, s: turns.by_turns(i))

    async def get_tool_usage(self, branch_id: str | None = None) -> list[tuple[str | None, int,
                                                                               int]]:
        """(tool name, calls, turn) for the tool calls of a branch, by turn."""
        return await self._adv_read(branch_id, lambda _, i, s: turns.tool_usage(i))

    # --- usage -----------------------------------------------------------------------------

    async def store_run_usage(self, result: Any) -> None:
        """Store a run's usage for the current turn of the branch current now (skipped when
        the branch has no turn or the session was cleared meanwhile)."""
        usage = result.context_wrapper.usage
        if usage is None:
            return
        branch, generation = self._adv_state
        row = [int(getattr(usage, f) or 0) for f in USAGE_FIELDS]
        details = [_details(getattr(usage, "input_tokens_details", None)),
                   _details(getattr(usage, "output_tokens_details", None))]

        def store(conn: sqlite3.Connection) -> None:
            if self._adv_moved_on(conn, generation) and generation is not None:
                return
            keys, items, _ = self._adv_rows(conn, branch)
            if not items:
                return
            turn = turns.turn_numbers(items)[-1]
            conn.execute("INSERT OR REPLACE INTO adv_usage VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                         (self.session_id, branch, turn,
                          turns.turn_anchors(items, keys)[turn], *row, *details))

        async with self._adv_lock:
            await self._adv_run(store, write=True)

    def _adv_usage_rows(self, conn: sqlite3.Connection,
                    branch: str | None) -> list[tuple[Any, ...]]:
        """Usage rows whose turn still starts with its anchor, by branch and turn."""
        rows = conn.execute("SELECT * FROM adv_usage WHERE session_id = ? ORDER BY branch_id, "
                            "turn", (self.session_id,)).fetchall()
        anchors: dict[str, dict[int, int]] = {}
        kept = []
        for row in rows:
            if branch is not None and row[1] != branch:
                continue
            if row[1] not in anchors:
                keys, items, _ = self._adv_rows(conn, row[1])
                anchors[row[1]] = turns.turn_anchors(items, keys)
            if anchors[row[1]].get(row[2]) == row[3]:
                kept.append(row)
        return kept

    async def get_session_usage(self, branch_id: str | None = None) -> dict[str, int] | None:
        """Totals over every branch (or one), with the number of turns; None without usage."""
        async with self._adv_lock:
            rows = await self._adv_run(lambda c: self._adv_usage_rows(c, branch_id or None), False)
        if not rows:
            return None
        totals = {f: sum(r[4 + n] for r in rows) for n, f in enumerate(USAGE_FIELDS)}
        return {**totals, "total_turns": len(rows)}

    async def get_turn_usage(self, user_turn_number: int | None = None,
                             branch_id: str | None = None) -> list[dict[str, Any]] | dict[str,
                                                                                          Any]:
        """One turn's usage (``{}`` without), or every turn's of a branch, by turn."""
        async with self._adv_lock:
            def read(conn: sqlite3.Connection) -> list[tuple[Any, ...]]:
                branch = self._adv_refresh(conn) if branch_id is None else branch_id
                return self._adv_usage_rows(conn, branch)

            rows = await self._adv_run(read, write=False)
        found = [{"user_turn_number": r[2], **dict(zip(USAGE_FIELDS, r[4:8], strict=True)),
                  "input_tokens_details": json.loads(r[8]) if r[8] else None,
                  "output_tokens_details": json.loads(r[9]) if r[9] else None} for r in rows]
        if user_turn_number is None:
            return found
        match = [{k: v for k, v in f.items() if k != "user_turn_number"} for f in found
                 if f["user_turn_number"] == user_turn_number]
        return match[0] if match else {}


def with_branches(cls: type[T]) -> type[T]:
    """Install the advanced API into ``cls``: its own protocol operations become the ``main``
    branch's (``_main_<op>``) and the mixin's branch-aware ones take their names."""
    for op in PROTOCOL:
        setattr(cls, f"_main_{op}", getattr(cls, op))
    for name, value in vars(BranchingMixin).items():
        if callable(value) and not name.startswith("__"):
            setattr(cls, name, value)
    init = cls.__init__

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        self._adv_init()

    cls.__init__ = __init__  # type: ignore[method-assign]
    return cls
