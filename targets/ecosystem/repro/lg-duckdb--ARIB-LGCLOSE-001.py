"""ARIB-LGCLOSE-001 on lg-duckdb, outside the harness: the context manager of
``DuckDBSaver.from_conn_string`` (langgraph-checkpoint-duckdb 2.0.2) exits while three threads
put checkpoints through the saver, and the exit raises instead of returning.

DuckDBSaver is built for use from several threads: it takes its own ``threading.Lock`` around
every statement, each run on a cursor of its one connection. The context manager's exit closes
that connection without taking the lock, so the close lands while a writer is inside the
connection; DuckDB (2.0.1 here) refuses a connection that is in use rather than waiting
("ResourceInUseException: ... connection is busy with another call"), and the exception escapes
the ``with`` block. The writers then fail with "Connection already closed". The same exit after
the writers have stopped returns. Run in the lg-duckdb environment of `nox -s ecosystem`;
exit 1: reproduced."""

from __future__ import annotations

import os
import tempfile
import threading
import time

from _repro import run
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.duckdb import DuckDBSaver

ROUNDS = 5
WRITERS = 3


def one_round(path: str) -> str | None:
    """Writers put while the context exits; what the exit raised, or None when it returned."""
    cm = DuckDBSaver.from_conn_string(path)
    saver = cm.__enter__()
    refused: list[str] = []

    def writer(w: int) -> None:
        config = {"configurable": {"thread_id": f"t{w}", "checkpoint_ns": ""}}
        for step in range(200):
            try:
                saver.put(config, empty_checkpoint(), {"step": step}, {})  # type: ignore[arg-type]
            except Exception as exc:  # noqa: BLE001 - after the exit, refusal is expected
                refused.append(f"writer {w} step {step}: {type(exc).__name__}: {exc}")
                return

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(WRITERS)]
    for thread in threads:
        thread.start()
    time.sleep(0.01)
    try:
        cm.__exit__(None, None, None)
        raised = None
    except Exception as exc:  # noqa: BLE001 - the observation
        raised = f"{type(exc).__name__}: {exc}"
    for thread in threads:
        thread.join()
    print(f"exit with {WRITERS} writers in flight: "
          f"{'raised ' + raised if raised else 'returned'}; first refusal: "
          f"{refused[0] if refused else None}")
    return raised


def main() -> bool:
    """True when the exit raised in some round, while it returns with no writer in flight."""
    path = os.path.join(tempfile.mkdtemp(), "checkpoints.duckdb")
    with DuckDBSaver.from_conn_string(path) as saver:
        saver.setup()  # its README: call .setup() the first time
    raised = [one_round(path) for _ in range(ROUNDS)]
    with DuckDBSaver.from_conn_string(path) as saver:
        saver.put({"configurable": {"thread_id": "quiet", "checkpoint_ns": ""}},
                  empty_checkpoint(), {"step": 0}, {})
    print("the same exit with no writer in flight: returned")
    print(f"the exit raised in {sum(r is not None for r in raised)} of {ROUNDS} rounds")
    return any(raised)


if __name__ == "__main__":
    run(main)
