"""The seed release's published cells (openai-agents 0.19.2), to compare our run against.

Source: shared/seeds/000_91c325d3684ad275.txt (v0.1.0: 16 findings, 8 held, 6 violated,
2 not applicable) and the Foundation issue, which spells the cells out: REPLAY-001 violated on
all four backends; CONC-002 and CONC-003 violated on AsyncSQLiteSession; both not applicable on
SQLAlchemySession, which has no close(); everything else held.
"""

from __future__ import annotations

from arib.ground.keys import Cell

SEED_SDK = "0.19.2"

SEED_LANES = {
    "sqlite-file": "SQLiteSession",
    "async-sqlite-file": "AsyncSQLiteSession",
    "advanced-sqlite-file": "AdvancedSQLiteSession",
    "sqlalchemy-sqlite-file": "SQLAlchemySession",
}

SEED_CELLS: dict[Cell, str] = {}
for _lane in SEED_LANES:
    SEED_CELLS[Cell("ARIB-CONC-001", _lane)] = "held"
    SEED_CELLS[Cell("ARIB-REPLAY-001", _lane)] = "violated"
    for _check in ("ARIB-CONC-002", "ARIB-CONC-003"):
        SEED_CELLS[Cell(_check, _lane)] = {
            "async-sqlite-file": "violated",
            "sqlalchemy-sqlite-file": "not_applicable",
        }.get(_lane, "held")

# Where our check deliberately differs from the seed's, and so may differ cell by cell.
SEED_NOTES: dict[str, str] = {
    "ARIB-CONC-003": (
        "our ARIB-CONC-003 is stronger than the seed's: besides a one-item add_items() it "
        "also tries an empty batch, pop_item() and clear_session() on the closed session, "
        "each a write that must be refused; the modes name the operation that was accepted"
    ),
}
