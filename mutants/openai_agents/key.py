"""Hand-written mutants about keys and read budgets (ARIB-KEY-001, ARIB-BUDGET-001)."""

from __future__ import annotations

from typing import Any

from arib.mutants.base import handwritten, load_class

REF = "arib.targets.openai_agents.reference"
ENCRYPT = "agents.extensions.memory.encrypt_session"


@handwritten(
    target="reference",
    module=REF,
    qualname="ReferenceSession.pop_item",
    defect="a pop that clears the way: rows it cannot read (another key's) are deleted on its "
    "way down to the newest row it can read",
)
def reference_pop_drops_unauthenticated_rows() -> None:
    from arib.targets.openai_agents import reference

    cls = load_class(REF, "ReferenceSession")

    async def pop_item(self: Any) -> Any:
        def pop(conn: Any) -> Any:
            rows = conn.execute("SELECT seq, body FROM items WHERE session_id = ? "
                                "ORDER BY seq DESC", (self.session_id,)).fetchall()
            for seq, body in rows:
                conn.execute("DELETE FROM items WHERE seq = ?", (seq,))
                item = self._open(body)
                if item is not reference.UNDECODABLE:
                    return item
            return None

        async with self._lock:
            return await self._transact(pop, write=True)

    cls.pop_item = pop_item


@handwritten(
    target="encrypted-sqlite",
    module=ENCRYPT,
    qualname="EncryptedSession.pop_item",
    defect="decrypt after delete: the pop removes the wrapped store's newest row first and "
    "only then tries to decrypt it, going on to the next row when the key does not fit",
)
def encrypted_pop_deletes_before_it_authenticates() -> None:
    cls = load_class(ENCRYPT, "EncryptedSession")

    async def pop_item(self: Any, *, wrapper: Any = None) -> Any:
        while True:
            row = await self.underlying_session.pop_item()
            if not row:
                return None
            item = self._unwrap(row)
            if item is not None:
                return item

    cls.pop_item = pop_item


@handwritten(
    target="reference",
    module=REF,
    qualname="ReferenceSession._configure",
    defect="a budget of 0 taken as 'no budget': max_scan_items=0 is accepted and every read "
    "is unbounded",
)
def reference_zero_budget_means_unbounded() -> None:
    cls = load_class(REF, "ReferenceSession")
    original = cls._configure

    def _configure(self: Any, encryption_key: str | None = None,
                   max_scan_items: int | None = None) -> None:
        original(self, encryption_key, max_scan_items or None)

    cls._configure = _configure


@handwritten(
    target="encrypted-sqlite",
    module=ENCRYPT,
    qualname="EncryptedSession.get_items",
    defect="a truncated history passed off as whole: a read the budget cannot complete "
    "returns the newest max_scan_items items instead of raising",
)
def encrypted_exhausted_budget_returns_newest_window() -> None:
    cls = load_class(ENCRYPT, "EncryptedSession")
    original = cls.get_items

    async def get_items(self: Any, limit: int | None = None, *, wrapper: Any = None) -> Any:
        try:
            return await original(self, limit, wrapper=wrapper)
        except RuntimeError:
            return await original(self, self.max_scan_items, wrapper=wrapper)

    cls.get_items = get_items
