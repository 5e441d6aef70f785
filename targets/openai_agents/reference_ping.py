"""ping() for the reference backend: does the store still answer at its address?

RedisSession offers ``ping()``: True while its server answers, False while it does not, and a
loud refusal once a session that owns its client is closed. The reference offers the same
contract for its own store, whose address is a file path: ``ping()`` opens the path read-only
on a fresh connection and runs one query. A store moved away from its path (or unreadable)
answers False; a closed session refuses with ``SessionClosedError``. A ping never writes.
"""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING
from urllib.parse import quote

if TYPE_CHECKING:
    import anyio


class PingMixin:
    """Adds ``ping()`` to ReferenceSession (which provides the attributes declared here)."""

    if TYPE_CHECKING:
        db_path: str
        _lock: anyio.Lock

        def _live(self) -> sqlite3.Connection: ...

    async def ping(self) -> bool:
        """True when the store answers at its path, False when not; raises once closed."""
        async with self._lock:
            self._live()
            try:
                probe = sqlite3.connect(f"file:{quote(self.db_path)}?mode=ro", uri=True,
                                        timeout=0)
                try:
                    probe.execute("SELECT count(*) FROM sqlite_master").fetchone()
                finally:
                    probe.close()
            except sqlite3.Error:
                return False
            return True
