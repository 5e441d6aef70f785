"""Hand-written mutants that only a killed process shows (ARIB-LGDUR-001): acknowledged
writes kept where SIGKILL loses them. Our own code, installed over a saver's methods."""

from __future__ import annotations

from typing import Any

from arib.mutants.base import handwritten, load_class

REFERENCE = "arib.targets.langgraph.reference"
ASYNC_SQLITE = "langgraph.checkpoint.sqlite.aio"
FLUSH_AT = 10_000  # more ops than any trial makes: the buffer is flushed only on dispose


@handwritten(target="lg-reference", module=REFERENCE, qualname="ReferenceSaver.put",
             defect="write-behind: put and put_writes return at once and are written to the "
                    "file only when a large buffer fills or the saver is disposed")
def lg_reference_write_behind() -> None:
    cls = load_class(REFERENCE, "ReferenceSaver")
    put, put_writes, dispose = cls.put, cls.put_writes, cls.dispose

    def flush(self: Any) -> None:
        pending, self._pending = getattr(self, "_pending", []), []
        for method, args in pending:
            method(self, *args)

    def buffered(method: Any) -> Any:
        def later(self: Any, *args: Any) -> Any:
            self.__dict__.setdefault("_pending", []).append((method, args))
            if len(self._pending) >= FLUSH_AT:
                flush(self)
            if method is put:
                thread, ns = args[0]["configurable"]["thread_id"], args[0]["configurable"].get(
                    "checkpoint_ns", "")
                return {"configurable": {"thread_id": thread, "checkpoint_ns": ns,
                                         "checkpoint_id": args[1]["id"]}}
            return None
        return later

    def flushing_dispose(self: Any) -> None:
        flush(self)
        dispose(self)

    cls.put, cls.put_writes, cls.dispose = buffered(put), buffered(put_writes), flushing_dispose


@handwritten(target="lg-async-sqlite-file", module=ASYNC_SQLITE, qualname="AsyncSqliteSaver.setup",
             defect="the saver's connection never commits: every acknowledged put and "
                    "put_writes stays in an open transaction that dies with the process")
def lg_async_sqlite_never_commits() -> None:
    cls = load_class(ASYNC_SQLITE, "AsyncSqliteSaver")
    setup = cls.setup

    async def no_commit() -> None:
        return None

    async def setup_then_hold(self: Any) -> None:
        await setup(self)
        self.conn.commit = no_commit

    cls.setup = setup_then_hold
