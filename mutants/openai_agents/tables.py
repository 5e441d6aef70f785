"""Hand-written mutants: a reference store that accepts, mis-refuses or is changed by a session
configured for tables it does not hold (ARIB-TABLES-001). Each replaces the ``claim_tables``
the reference module calls."""

from __future__ import annotations

import importlib
import sqlite3

from arib.mutants.base import handwritten

REF = "arib.targets.openai_agents.reference"
TABLES = "arib.targets.openai_agents.reference_tables"


def _install(claim: object) -> None:
    vars(importlib.import_module(REF))["claim_tables"] = claim


@handwritten(
    target="reference",
    module=TABLES,
    qualname="claim_tables",
    defect="no ownership check: an instance configured for any table pair is served on any "
    "store",
)
def reference_tables_claim_ignored() -> None:
    def claim_tables(conn: sqlite3.Connection, db_path: str, pair: tuple[str, str],
                     create_tables: bool) -> None:
        return None

    _install(claim_tables)


@handwritten(
    target="reference",
    module=TABLES,
    qualname="claim_tables",
    defect="a store of another pair is refused with the driver's 'no such table' error, not "
    "the documented ValueError",
)
def reference_tables_wrong_refusal() -> None:
    original = importlib.import_module(TABLES).claim_tables

    def claim_tables(conn: sqlite3.Connection, db_path: str, pair: tuple[str, str],
                     create_tables: bool) -> None:
        try:
            original(conn, db_path, pair, create_tables)
        except ValueError:
            raise sqlite3.OperationalError(f"no such table: {pair[1]}") from None

    _install(claim_tables)


@handwritten(
    target="reference",
    module=TABLES,
    qualname="claim_tables",
    defect="a refused instance with table creation first writes its own claim over the "
    "store's: the store's own pair is locked out afterwards",
)
def reference_tables_refusal_takes_claim() -> None:
    original = importlib.import_module(TABLES).claim_tables

    def claim_tables(conn: sqlite3.Connection, db_path: str, pair: tuple[str, str],
                     create_tables: bool) -> None:
        try:
            original(conn, db_path, pair, create_tables)
        except ValueError:
            if create_tables:
                conn.execute("INSERT OR REPLACE INTO table_claim VALUES (1, ?, ?)", pair)
                conn.commit()
            raise

    _install(claim_tables)


@handwritten(
    target="reference",
    module=TABLES,
    qualname="claim_tables",
    defect="without table creation every store is refused, also one its own pair claimed",
)
def reference_tables_refuses_own_pair() -> None:
    original = importlib.import_module(TABLES).claim_tables

    def claim_tables(conn: sqlite3.Connection, db_path: str, pair: tuple[str, str],
                     create_tables: bool) -> None:
        if not create_tables:
            raise ValueError(f"{db_path!r}: open it with create_tables=True")
        original(conn, db_path, pair, create_tables)

    _install(claim_tables)


@handwritten(
    target="reference",
    module=TABLES,
    qualname="claim_tables",
    defect="an instance without table creation claims an unclaimed store anyway",
)
def reference_tables_unclaimed_accepted() -> None:
    original = importlib.import_module(TABLES).claim_tables

    def claim_tables(conn: sqlite3.Connection, db_path: str, pair: tuple[str, str],
                     create_tables: bool) -> None:
        original(conn, db_path, pair, True)

    _install(claim_tables)
