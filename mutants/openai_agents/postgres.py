"""Hand-written mutants of SQLAlchemySession on PostgreSQL (overrides, our own code)."""

from __future__ import annotations

from typing import Any

from arib.mutants.base import handwritten, load_class

SQLALCHEMY = "agents.extensions.memory.sqlalchemy_session"


@handwritten(
    target="sqlalchemy-postgres",
    module=SQLALCHEMY,
    qualname="SQLAlchemySession.add_items",
    defect="a connection failure swallowed: add_items returns normally when the database "
    "connection fails during its transaction, so the caller believes a lost batch was stored",
)
def postgres_add_swallows_connection_error() -> None:
    from sqlalchemy.exc import DBAPIError

    cls = load_class(SQLALCHEMY, "SQLAlchemySession")
    original = cls.add_items

    async def add_items(self: Any, items: list[Any]) -> None:
        try:
            await original(self, items)
        except DBAPIError:
            return

    cls.add_items = add_items


@handwritten(
    target="sqlalchemy-postgres",
    module=SQLALCHEMY,
    qualname="SQLAlchemySession.get_items",
    defect="LIMIT before the session filter: a limit read takes the newest k rows of the "
    "table and keeps this session's, so the window comes up short when another session "
    "wrote last",
)
def postgres_limit_before_session_filter() -> None:
    from sqlalchemy import select

    cls = load_class(SQLALCHEMY, "SQLAlchemySession")
    original = cls.get_items

    async def get_items(self: Any, limit: int | None = None) -> list[Any]:
        if limit is None or limit <= 0:
            return await original(self, limit)  # type: ignore[no-any-return]
        await self._ensure_tables()
        m = self._messages
        newest = (select(m.c.session_id, m.c.message_data)
                  .order_by(m.c.created_at.desc(), m.c.id.desc()).limit(limit))
        async with self._session() as sess:
            rows = (await sess.execute(newest)).all()
        own = [row.message_data for row in rows if row.session_id == self.session_id]
        return [await self._deserialize_item(raw) for raw in reversed(own)]

    cls.get_items = get_items


@handwritten(
    target="sqlalchemy-postgres",
    module=SQLALCHEMY,
    qualname="SQLAlchemySession.pop_item",
    defect="tables created on write only: pop_item() skips the lazy table creation, so a pop "
    "on a brand-new store fails with 'relation does not exist'",
)
def postgres_pop_before_tables_exist() -> None:
    # Skips the creation for the pop's own task only (a ContextVar, not a flag on the
    # instance), whatever the release's pop_item calls: 0.24.0 wraps its body in helpers
    # that older releases do not have.
    from contextvars import ContextVar

    cls = load_class(SQLALCHEMY, "SQLAlchemySession")
    ensure, pop = cls._ensure_tables, cls.pop_item
    popping: ContextVar[bool] = ContextVar("popping", default=False)

    async def _ensure_tables(self: Any) -> None:
        if not popping.get():
            await ensure(self)

    async def pop_item(self: Any) -> Any:
        token = popping.set(True)
        try:
            return await pop(self)
        finally:
            popping.reset(token)

    cls._ensure_tables = _ensure_tables
    cls.pop_item = pop_item
