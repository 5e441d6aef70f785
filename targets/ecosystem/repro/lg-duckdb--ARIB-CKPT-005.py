"""ARIB-CKPT-005 on lg-duckdb, outside the harness: the order DuckDBSaver
(langgraph-checkpoint-duckdb 2.0.2, on langgraph-checkpoint 2.1.2, the newest it installs with)
gives a checkpoint's pending writes, beside InMemorySaver of the same version and the
(task_path, task_id, idx) order that langgraph-checkpoint 4.3.2 documents (see
_writes_order.py). The package's SQL aggregates the writes with no ORDER BY. langgraph-checkpoint
2.1.2 documents no order and its own InMemorySaver returns the writes as they were put, so the
script reports a violation only where the installed LangGraph documents an order. Run in the
lg-duckdb environment of `nox -s ecosystem`; exit 1: reproduced."""

from __future__ import annotations

from _repro import run
from _writes_order import compare
from langgraph.checkpoint.duckdb import DuckDBSaver


def main() -> bool:
    """True when DuckDBSaver breaks an order its LangGraph documents."""
    with DuckDBSaver.from_conn_string(":memory:") as saver:
        saver.setup()
        return compare("DuckDBSaver", saver)


if __name__ == "__main__":
    run(main)
