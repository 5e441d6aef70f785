"""What a lane's store offers beyond one instance, read on the runtime object.

A check whose fault needs a second instance on the same store (a fresh reader, a peer session
id, a reopen) or a second process abstains where the store cannot offer it, with the reason
found on the object (``arib.targets.base.Handle`` states the rule): it never reads a new, empty
store and reports the difference as lost items.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from arib.targets.base import Handle, NotApplicable

if TYPE_CHECKING:
    from arib.checks.base import TrialContext

PEER_SUFFIX = "-peer"


async def open_peer(ctx: TrialContext, session_id: str) -> Handle:
    """Another instance on this trial's store as ``session_id``, disposed with the trial."""
    handle = await ctx.target.build(dataclasses.replace(ctx.build, session_id=session_id))
    ctx._handles.append(handle)  # disposed in reverse order, like ctx.open()'s handles
    return handle


async def reader_of(ctx: TrialContext, handle: Handle) -> Any:
    """A fresh instance on ``handle``'s store, or, where the store is private to that one
    instance (``SQLiteSession(":memory:")``), the instance itself: for a check whose fault
    does not need a second instance and that only reads through one where there can be one.
    """
    if handle.private_store:
        ctx.log(f"reads go through X itself: {handle.private_store}")
        return handle.session
    return (await ctx.reopen(handle)).session


def require_shared_store(handle: Handle, check_id: str, need: str) -> None:
    """Abstain (``NotApplicable``) when no second instance can open ``handle``'s store."""
    if handle.private_store:
        raise NotApplicable(f"{check_id} does not apply: it needs {need}, but "
                            f"{handle.private_store}")


def process_local_store(session: Any) -> str | None:
    """Why ``session`` keeps its store in process memory (verified on the object), or None."""
    db_path = getattr(session, "db_path", None)  # EncryptedSession forwards to the wrapped one
    if db_path is not None and (str(db_path) in ("", ":memory:")
                                or str(db_path).startswith("file::memory:")
                                or "mode=memory" in str(db_path)):
        return f"{type(session).__name__}.db_path is {str(db_path)!r}: an in-process store"
    engine = getattr(session, "engine", None) or getattr(session, "_engine", None)
    url = getattr(engine, "url", None)
    if url is not None and str(getattr(url, "drivername", "")).startswith("sqlite") and (
            getattr(url, "database", None) in (None, "", ":memory:")):
        return f"{type(session).__name__} engine URL {url!s} is an in-memory SQLite database"
    return None


def require_cross_process_store(session: Any, check_id: str, need: str) -> None:
    """Abstain (``NotApplicable``) when ``session``'s store lives in this process's memory."""
    local = process_local_store(session)
    if local is not None:
        raise NotApplicable(f"{check_id} does not apply: it needs {need}, but {local}")
