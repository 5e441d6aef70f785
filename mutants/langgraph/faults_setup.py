"""Hand-written mutants that several instances setting up one store show (ARIB-LGSETUP-001):
a schema step that is not idempotent, so every instance after the first fails its setup.
Our own code, installed over a saver's method."""

from __future__ import annotations

from typing import Any

from arib.mutants.base import handwritten, load_class

REFERENCE = "arib.targets.langgraph.reference"
SQLITE = "langgraph.checkpoint.sqlite"
ASYNC_SQLITE = "langgraph.checkpoint.sqlite.aio"
# A migration without its "already done" guard: the second run fails with "duplicate column".
MIGRATION = "ALTER TABLE writes ADD COLUMN arib_migrated INTEGER NOT NULL DEFAULT 0"


@handwritten(target="lg-reference", module=REFERENCE, qualname="ReferenceSaver.__init__",
             defect="the constructor's schema step is not idempotent: a second instance on the "
                    "store fails creating a table that exists")
def lg_reference_schema_not_idempotent() -> None:
    cls = load_class(REFERENCE, "ReferenceSaver")
    init = cls.__init__

    def __init__(self: Any, path: Any, **kwargs: Any) -> None:
        init(self, path, **kwargs)
        with self._lock:
            self._conn.execute("CREATE TABLE ref_migrations (version INTEGER)")

    cls.__init__ = __init__


@handwritten(target="lg-sqlite-file", module=SQLITE, qualname="SqliteSaver.setup",
             defect="setup runs a migration without its guard: every instance after the first "
                    "fails with 'duplicate column name'")
def lg_sqlite_migration_not_idempotent() -> None:
    cls = load_class(SQLITE, "SqliteSaver")
    setup = cls.setup

    def unguarded(self: Any) -> None:
        if not self.is_setup:
            setup(self)
            self.conn.execute(MIGRATION)

    cls.setup = unguarded


@handwritten(target="lg-async-sqlite-file", module=ASYNC_SQLITE, qualname="AsyncSqliteSaver.setup",
             defect="setup runs a migration without its guard: every instance after the first "
                    "fails with 'duplicate column name'")
def lg_async_sqlite_migration_not_idempotent() -> None:
    cls = load_class(ASYNC_SQLITE, "AsyncSqliteSaver")
    setup = cls.setup

    async def unguarded(self: Any) -> None:
        if not self.is_setup:
            await setup(self)
            await self.conn.execute(MIGRATION)
            await self.conn.commit()

    cls.setup = unguarded
