"""Hand-written mutants of our reference checkpointer, and its forced-broken mutant."""

from __future__ import annotations

import importlib
import sqlite3
from typing import Any

from arib.mutants.base import handwritten, load_class

MODULE = "arib.targets.langgraph.reference"


@handwritten(target="lg-reference", module=MODULE, qualname="ReferenceSaver.put",
             defect="metadata is stored empty: a round trip loses every metadata key")
def lg_reference_drops_metadata() -> None:
    cls = load_class(MODULE, "ReferenceSaver")
    original = cls.put

    def put(self: Any, config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:
        return original(self, config, checkpoint, {}, new_versions)

    cls.put = put


@handwritten(target="lg-reference", module=MODULE, qualname="make_tables",
             defect="the schema step refuses a file that already holds its tables: a second "
                    "instance on a file that already holds checkpoints raises, so a restart "
                    "reads nothing")
def lg_reference_reopen_raises() -> None:
    module: Any = importlib.import_module(MODULE)
    make = module.make_tables

    def make_tables(conn: sqlite3.Connection) -> None:
        if conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'ref_checkpoints'").fetchone():
            raise sqlite3.OperationalError("table ref_checkpoints already exists")
        make(conn)

    module.make_tables = make_tables


@handwritten(target="lg-reference", module=MODULE, qualname="make_tables",
             defect="the schema names a column twice: a fresh file cannot be set up, so the "
                    "saver cannot be made at all")
def lg_reference_setup_fails() -> None:
    module: Any = importlib.import_module(MODULE)

    def make_tables(conn: sqlite3.Connection) -> None:
        conn.execute("CREATE TABLE IF NOT EXISTS ref_checkpoints (thread_id TEXT, ns TEXT, "
                     "ns TEXT)")

    module.make_tables = make_tables


@handwritten(target="lg-reference", module=MODULE, qualname="ReferenceSaver",
             defect="forced-broken: every operation raises; every check must be violated",
             forced=True)
def lg_reference_forced_broken() -> None:
    cls = load_class(MODULE, "ReferenceSaver")

    def broken(self: Any, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("forced-broken mutant")

    async def abroken(self: Any, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("forced-broken mutant")

    for name in ("get_tuple", "list", "put", "put_writes", "delete_thread"):
        setattr(cls, name, broken)
    for name in ("aget_tuple", "alist", "aput", "aput_writes", "adelete_thread"):
        setattr(cls, name, abroken)
