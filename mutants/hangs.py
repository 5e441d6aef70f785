"""The order mutant runs are started in: the ones that may hang first.

Apart from ``arib.mutants.operators`` (which imports libcst, a third of a second), so that a run
whose generated mutants all come from the generation cache orders them without importing it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

T = TypeVar("T")

# Operators whose mutants tend to block until their time limit (an open transaction that the
# next writer waits on): runners start them first, so they do not end a run alone
# (``Operator.may_hang``).
HANG_PRONE = frozenset({"drop_commit", "drop_rollback"})


def hang_prone_first(items: Sequence[T], operator_of: Callable[[T], str | None]) -> list[T]:
    """``items`` with those whose operator is in HANG_PRONE first, otherwise in the same order.

    Longest-expected-first scheduling: a mutant that blocks until its time limit, started
    last, keeps a run going alone after every other mutant is judged.
    """
    return sorted(items, key=lambda item: operator_of(item) not in HANG_PRONE)
