"""A user's own store that takes the three constructor options a check opens it with, as someone
outside this repo would write it: ``encryption_key`` (ARIB-KEY-001), ``max_scan_items``
(ARIB-BUDGET-001) and a table pair (``create_tables``, ``sessions_table``, ``messages_table``,
ARIB-TABLES-001), and three copies of it with one realistic defect each.

``SealedStore`` keeps a session's items in one SQLite file under the trial's root:

- **Tables.** A file belongs to one table pair, written down in its ``store_layout`` table by
  the first instance that may create tables. An instance configured for another pair, or one
  without table creation on a file that belongs to no pair yet, is refused with ValueError
  at construction, before it writes anything.
- **Key.** Each row carries an HMAC-SHA256 of the session id and the item's JSON under the
  instance's key (no seal without a key). An instance reads, pops and clears only the rows it
  can authenticate, that is the rows it could have written itself; the others are left as
  they are, where they are.
- **Budget.** ``max_scan_items=N`` (a positive whole number, else ValueError) lets one read
  fetch at most the N newest rows. A read answers when those rows hold its result and raises
  RuntimeError when they cannot tell it; a negative limit is refused with ValueError.

Every method runs its SQL with no ``await`` in between, so on one event loop nothing comes
between a read and the write that follows it.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import sqlite3
import threading
from pathlib import Path
from typing import Any

from arib.api import lane

DEFAULT_TABLES = ("agent_sessions", "agent_messages")
# The key the store is configured with in these tests (public, fixed; not a secret).
APP_KEY = "userstore-app-key-not-secret"
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_LAYOUT = ("CREATE TABLE IF NOT EXISTS store_layout (only INTEGER PRIMARY KEY CHECK (only = 1), "
           "sessions_table TEXT NOT NULL, messages_table TEXT NOT NULL)")


def _table_name(option: str, name: str) -> str:
    if not isinstance(name, str) or not _NAME.match(name):
        raise ValueError(f"{option}={name!r} is not a table name (letters, digits and _)")
    return name


class SealedStore:
    """An openai-agents Session on one SQLite file, with a key, a read budget and a table pair."""

    def __init__(self, session_id: str, path: Path, *, encryption_key: str | None = None,
                 max_scan_items: int | None = None, create_tables: bool = True,
                 sessions_table: str = DEFAULT_TABLES[0],
                 messages_table: str = DEFAULT_TABLES[1]) -> None:
        if max_scan_items is not None and (isinstance(max_scan_items, bool)
                                           or not isinstance(max_scan_items, int)
                                           or max_scan_items < 1):
            raise ValueError(f"max_scan_items={max_scan_items!r}: a read budget is a positive "
                             f"number of rows, or None for no budget")
        if encryption_key is not None and not encryption_key:
            raise ValueError("encryption_key='' : give a key, or None for unsealed rows")
        pair = (_table_name("sessions_table", sessions_table),
                _table_name("messages_table", messages_table))
        if pair[0] == pair[1]:
            raise ValueError(f"sessions_table and messages_table are both {pair[0]!r}; "
                             f"they must be two tables")
        self.session_id = session_id
        self.path = path
        self.key = encryption_key
        self.budget = max_scan_items
        self.sessions_table, self.messages_table = pair
        # close() may come from other threads (ARIB-CONC-002 closes from several at once) while
        # the loop's thread reads or writes: sqlite3 takes no concurrent close, so every use of
        # the connection holds this lock (a close beside another call crashed the process)
        self.db = sqlite3.connect(path, check_same_thread=False)
        self.guard = threading.RLock()
        try:
            self._attach(create_tables)
        except BaseException:
            self.db.close()
            raise

    # ------------------------------------------------------------------ tables

    def _layout(self) -> tuple[str, str] | None:
        """The pair this file belongs to, or None when it belongs to none yet."""
        if self.db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' "
                           "AND name = 'store_layout'").fetchone() is None:
            return None
        row = self.db.execute("SELECT sessions_table, messages_table "
                              "FROM store_layout").fetchone()
        return None if row is None else (row[0], row[1])

    def _create(self) -> None:
        """Give an unclaimed file this instance's table pair (inside the caller's transaction)."""
        self.db.execute(_LAYOUT)
        self.db.execute(f'CREATE TABLE "{self.sessions_table}" '
                        f"(session_id TEXT PRIMARY KEY)")
        self.db.execute(f'CREATE TABLE "{self.messages_table}" (id INTEGER PRIMARY KEY '
                        f"AUTOINCREMENT, session_id TEXT NOT NULL, seal TEXT, body TEXT NOT NULL)")
        self.db.execute("INSERT INTO store_layout VALUES (1, ?, ?)",
                        (self.sessions_table, self.messages_table))

    def _attach(self, create_tables: bool) -> None:
        """Belong to the file's table pair, creating it first when allowed and none exists;
        ValueError, with nothing written, when the file holds another pair or none."""
        with self.db:  # one transaction: two first instances cannot both create tables
            self.db.execute("BEGIN IMMEDIATE")
            found = self._layout()
            if found is None and create_tables:
                self._create()
                found = (self.sessions_table, self.messages_table)
        if found is None:
            raise ValueError(f"{self.path} holds no session tables and this instance may not "
                             f"create them (create_tables=False); open it once with "
                             f"create_tables=True")
        if found != (self.sessions_table, self.messages_table):
            raise ValueError(f"{self.path} holds the tables {found[0]!r}/{found[1]!r}, not the "
                             f"configured {self.sessions_table!r}/{self.messages_table!r}; "
                             f"configure those, or give this pair its own file")

    # ------------------------------------------------------------------ the key

    def _seal(self, body: str) -> str | None:
        """The seal of ``body`` under this instance's key (None without a key)."""
        if self.key is None:
            return None
        message = f"{self.session_id}\n{body}".encode()
        return hmac.new(self.key.encode(), message, hashlib.sha256).hexdigest()

    def _mine(self, seal: str | None, body: str) -> bool:
        """Whether this instance could have written the row (its key's seal, or no key and none)."""
        expected = self._seal(body)
        if expected is None or seal is None:
            return expected is None and seal is None
        return hmac.compare_digest(seal, expected)

    def _rows(self, newest: int | None = None) -> list[tuple[int, str | None, str]]:
        """(id, seal, body) of this session's rows, oldest first; only the ``newest`` N."""
        rows = self.db.execute(f'SELECT id, seal, body FROM "{self.messages_table}" '
                               f"WHERE session_id = ? ORDER BY id DESC LIMIT ?",
                               (self.session_id, -1 if newest is None else newest)).fetchall()
        return rows[::-1]

    # ------------------------------------------------------------------ Session

    async def get_items(self, limit: int | None = None) -> list[Any]:
        """The newest ``limit`` items this key reads (all for None or a negative limit
        without a budget), oldest first."""
        with self.guard:
            if self.budget is not None:
                return self._budgeted(limit)
            items = [json.loads(body) for _, seal, body in self._rows()
                     if self._mine(seal, body)]
            if limit is None or limit < 0:
                return items
            return items[len(items) - min(limit, len(items)):]

    def _budgeted(self, limit: int | None) -> list[Any]:
        """A read that fetches at most ``self.budget`` rows: their result, or RuntimeError
        when those rows cannot tell it."""
        assert self.budget is not None
        if limit is not None and limit < 0:
            raise ValueError(f"get_items(limit={limit!r}) with max_scan_items={self.budget}: "
                             f"a budgeted read takes no negative limit; pass None or 0..N")
        if limit == 0:
            return []
        rows = self._rows(self.budget)
        items = [json.loads(body) for _, seal, body in rows if self._mine(seal, body)]
        if limit is not None and len(items) >= limit:
            return items[len(items) - limit:]
        if len(rows) < self.budget:  # every row of the session was fetched
            return items
        raise RuntimeError(f"get_items(limit={limit!r}) needs more than the "
                           f"max_scan_items={self.budget} newest rows; raise the budget")

    async def add_items(self, items: list[Any]) -> None:
        """Append ``items`` in one transaction, each sealed under this instance's key."""
        with self.guard:
            bodies = [json.dumps(item) for item in items]
            with self.db:
                self.db.execute(f'INSERT OR IGNORE INTO "{self.sessions_table}" VALUES (?)',
                                (self.session_id,))
                self.db.executemany(
                    f'INSERT INTO "{self.messages_table}" (session_id, seal, body) '
                    f"VALUES (?, ?, ?)",
                    [(self.session_id, self._seal(body), body) for body in bodies])

    async def pop_item(self) -> Any | None:
        """Remove and return the newest item this key reads; rows it cannot read stay."""
        with self.guard:
            with self.db:
                for row_id, seal, body in reversed(self._rows()):
                    if self._mine(seal, body):
                        self.db.execute(f'DELETE FROM "{self.messages_table}" WHERE id = ?',
                                        (row_id,))
                        return json.loads(body)
            return None

    async def clear_session(self) -> None:
        """Remove every item of this session that this key reads."""
        with self.guard:
            with self.db:
                mine = [(row_id,) for row_id, seal, body in self._rows()
                        if self._mine(seal, body)]
                self.db.executemany(f'DELETE FROM "{self.messages_table}" WHERE id = ?', mine)

    def close(self) -> None:
        """Close the file; every call after it raises sqlite3.ProgrammingError."""
        with self.guard:
            self.db.close()


class PopsBeforeCheckingStore(SealedStore):
    """The key defect: pop_item deletes the newest row first and then looks whether the key
    reads it, so a wrong-key pop returns None and the history has lost its newest item."""

    async def pop_item(self) -> Any | None:
        with self.guard:
            with self.db:
                rows = self._rows(1)
                if not rows:
                    return None
                row_id, seal, body = rows[0]
                self.db.execute(f'DELETE FROM "{self.messages_table}" WHERE id = ?', (row_id,))
            return json.loads(body) if self._mine(seal, body) else None


class TruncatingBudgetStore(SealedStore):
    """The budget defect: a read whose result the budget's rows cannot hold returns what
    those rows show, a shorter window, instead of refusing."""

    def _budgeted(self, limit: int | None) -> list[Any]:
        assert self.budget is not None
        if limit is not None and limit < 0:
            raise ValueError(f"get_items(limit={limit!r}): no negative limit with a budget")
        if limit == 0:
            return []
        items = [json.loads(body) for _, seal, body in self._rows(self.budget)
                 if self._mine(seal, body)]
        return items if limit is None else items[len(items) - min(limit, len(items)):]


class TrustingTablesStore(SealedStore):
    """The tables defect: the configured names are taken on trust. With table creation it
    creates whichever pair it is given beside the one the file holds; without it, it assumes
    the tables are there, and its first read fails with sqlite3's own error."""

    def _attach(self, create_tables: bool) -> None:
        if create_tables:
            with self.db:
                self.db.execute(f'CREATE TABLE IF NOT EXISTS "{self.sessions_table}" '
                                f"(session_id TEXT PRIMARY KEY)")
                self.db.execute(f'CREATE TABLE IF NOT EXISTS "{self.messages_table}" (id '
                                f"INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL, "
                                f"seal TEXT, body TEXT NOT NULL)")


def _options(encryption_key: str | None, max_scan_items: int | None, create_tables: bool,
             sessions_table: str, messages_table: str) -> dict[str, Any]:
    return {"encryption_key": encryption_key, "max_scan_items": max_scan_items,
            "create_tables": create_tables, "sessions_table": sessions_table,
            "messages_table": messages_table}


@lane(has_close=True)
def sealed_store(root: Path, session_id: str, *, encryption_key: str | None = APP_KEY,
                 max_scan_items: int | None = None, create_tables: bool = True,
                 sessions_table: str = DEFAULT_TABLES[0],
                 messages_table: str = DEFAULT_TABLES[1]) -> SealedStore:
    """The careful store, configured with the app's key, no budget and the default tables."""
    return SealedStore(session_id, root / "store.db", **_options(
        encryption_key, max_scan_items, create_tables, sessions_table, messages_table))


@lane(has_close=True)
def pops_before_checking_store(root: Path, session_id: str, *,
                               encryption_key: str | None = APP_KEY,
                               max_scan_items: int | None = None, create_tables: bool = True,
                               sessions_table: str = DEFAULT_TABLES[0],
                               messages_table: str = DEFAULT_TABLES[1]
                               ) -> PopsBeforeCheckingStore:
    """The store whose wrong-key pop deletes the newest item."""
    return PopsBeforeCheckingStore(session_id, root / "store.db", **_options(
        encryption_key, max_scan_items, create_tables, sessions_table, messages_table))


@lane(has_close=True)
def truncating_budget_store(root: Path, session_id: str, *,
                            encryption_key: str | None = APP_KEY,
                            max_scan_items: int | None = None, create_tables: bool = True,
                            sessions_table: str = DEFAULT_TABLES[0],
                            messages_table: str = DEFAULT_TABLES[1]) -> TruncatingBudgetStore:
    """The store whose budgeted read returns a truncated window."""
    return TruncatingBudgetStore(session_id, root / "store.db", **_options(
        encryption_key, max_scan_items, create_tables, sessions_table, messages_table))


@lane(has_close=True)
def trusting_tables_store(root: Path, session_id: str, *, encryption_key: str | None = APP_KEY,
                          max_scan_items: int | None = None, create_tables: bool = True,
                          sessions_table: str = DEFAULT_TABLES[0],
                          messages_table: str = DEFAULT_TABLES[1]) -> TrustingTablesStore:
    """The store that takes its configured table names on trust."""
    return TrustingTablesStore(session_id, root / "store.db", **_options(
        encryption_key, max_scan_items, create_tables, sessions_table, messages_table))
