"""A time-to-live for the reference backend's sessions (what ARIB-TTL-001 holds it to).

RedisSession takes ``ttl`` ("time-to-live in seconds for session data"); the reference offers
the same contract for its own store, kept simple:

- A session opened with ``ttl=N`` records, in the transaction of each ``add_items``, that its
  history expires N seconds later. Each such write restarts the clock for the session's whole
  history (as each of RedisSession's appends sets the expiry of all the session's keys).
- Every transaction, of any instance or process on the file, first deletes the items of its
  session once that time has passed: from then on the whole history is gone for everyone, and
  new items start a fresh one. ``clear_session`` forgets a pending expiry with the items.
- Without a ttl a write leaves the clock as it is (a session never given a ttl never expires).
- The clock is the wall clock (``time.time()``), which every instance and process shares.

The expiry covers the protocol history (the ``items`` table); the advanced API's branches and
usage (arib.targets.openai_agents.reference_advanced) keep no ttl. A read that finds its session
expired deletes inside its (deferred) transaction; a lock held by another connection makes that a
busy error, which ``ReferenceSession._transact`` retries like any other.
"""

from __future__ import annotations

import sqlite3
import time

TTL_SCHEMA = ("CREATE TABLE IF NOT EXISTS item_ttl (session_id TEXT PRIMARY KEY, "
              "expires_at REAL NOT NULL)")


class TtlMixin:
    """Adds a session-wide, write-restarted ttl to ReferenceSession (see the module doc)."""

    session_id: str
    ttl: float | None = None

    def _expire_due(self, conn: sqlite3.Connection) -> None:
        """Delete this session's items (and its expiry) once its time has passed."""
        row = conn.execute("SELECT expires_at FROM item_ttl WHERE session_id = ?",
                           (self.session_id,)).fetchone()
        if row is not None and row[0] <= time.time():
            conn.execute("DELETE FROM items WHERE session_id = ?", (self.session_id,))
            self._forget_ttl(conn)

    def _restart_ttl(self, conn: sqlite3.Connection) -> None:
        """After a write: the session's history now expires ``ttl`` seconds from now."""
        if self.ttl is not None:
            conn.execute("INSERT OR REPLACE INTO item_ttl (session_id, expires_at) "
                         "VALUES (?, ?)", (self.session_id, time.time() + self.ttl))

    def _forget_ttl(self, conn: sqlite3.Connection) -> None:
        """No expiry is pending for this session (its history was cleared)."""
        conn.execute("DELETE FROM item_ttl WHERE session_id = ?", (self.session_id,))
