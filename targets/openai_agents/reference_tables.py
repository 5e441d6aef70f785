"""Which table pair a reference store belongs to (what ARIB-TABLES-001 holds it to).

AdvancedSQLiteSession takes ``sessions_table``, ``messages_table`` and ``create_tables``: one
database file holds the structure of one table pair, a session configured for another pair is
refused, and a session opened without table creation needs a store some pair already claimed.
The reference offers the same contract for its own store, kept simple:

- The store records in ``table_claim`` the pair (sessions table, messages table) that claimed
  it. An instance that may create tables (``create_tables=True``, the reference's default)
  claims an unclaimed store for its pair; any instance then requires the claim to be its own
  pair and is refused otherwise.
- Refusals are ``ValueError`` at construction, naming the store, the pair found and the fix,
  and they change nothing: no claim is written or overwritten, no item touched.
- Without any of the three options an instance is the default pair with table creation, so
  every store the bench opened before this contract is claimed by the default pair.

The pair names only the claim; the reference keeps its items in its own ``items`` table.
"""

from __future__ import annotations

import sqlite3

DEFAULT_PAIR = ("agent_sessions", "agent_messages")

CLAIM_SCHEMA = ("CREATE TABLE IF NOT EXISTS table_claim (only INTEGER PRIMARY KEY "
                "CHECK (only = 1), sessions_table TEXT NOT NULL, messages_table TEXT NOT NULL)")

TABLE_OPTION_DOCS = {
    "create_tables": "arib.targets.openai_agents.reference_tables: may claim an unclaimed "
                     "store for its table pair (default True); without it an unclaimed "
                     "store is refused",
    "sessions_table": "arib.targets.openai_agents.reference_tables: the sessions table of the pair "
                      "the store must belong to",
    "messages_table": "arib.targets.openai_agents.reference_tables: the messages table of the pair "
                      "the store must belong to",
}


def claim_tables(conn: sqlite3.Connection, db_path: str, pair: tuple[str, str],
                 create_tables: bool) -> None:
    """Claim the store for ``pair`` if it is unclaimed and ``create_tables``; then require the
    claim to be ``pair`` (ValueError, nothing changed, otherwise). Commits; a busy store raises
    sqlite3.OperationalError for the caller's retry."""
    conn.execute(CLAIM_SCHEMA)
    if create_tables:
        conn.execute("INSERT OR IGNORE INTO table_claim VALUES (1, ?, ?)", pair)
    row = conn.execute("SELECT sessions_table, messages_table FROM table_claim").fetchone()
    conn.commit()
    if row is None:
        raise ValueError(
            f"the store {db_path!r} is claimed by no table pair, and this session may not "
            f"create tables (create_tables=False); open it once with create_tables=True")
    if tuple(row) != pair:
        raise ValueError(
            f"the store {db_path!r} belongs to tables {row[0]!r}/{row[1]!r}, not to the "
            f"configured {pair[0]!r}/{pair[1]!r}: give each sessions_table/messages_table pair "
            f"its own db_path")
