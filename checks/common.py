"""Counting helpers shared by checks: what was expected against what a read returned."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from typing import Any

from harness.model import Counts


def canonical(item: Any) -> str:
    """Canonical JSON of an item: sorted keys, no spaces; tuples and lists compare equal."""
    return json.dumps(item, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def tally(expected: Iterable[Any], seen: Iterable[Any], errors: int = 0) -> Counts:
    """Lost, duplicated and foreign items of ``seen`` against ``expected`` (a multiset)."""
    want = Counter(canonical(i) for i in expected)
    got = Counter(canonical(i) for i in seen)
    lost = sum(max(n - got[k], 0) for k, n in want.items())
    duplicated = sum(max(n - want[k], 0) for k, n in got.items() if k in want)
    foreign = sum(n for k, n in got.items() if k not in want)
    return Counts(lost=lost, duplicated=duplicated, foreign=foreign, errors=errors)


def first_differences(expected: Iterable[Any], seen: Iterable[Any], limit: int = 3) -> str:
    """A short text naming a few lost and foreign items, for a finding's samples."""
    want = Counter(canonical(i) for i in expected)
    got = Counter(canonical(i) for i in seen)
    lost = [k for k in want if got[k] < want[k]][:limit]
    extra = [k for k in got if got[k] > want.get(k, 0)][:limit]
    parts = []
    if lost:
        parts.append("missing " + ", ".join(lost))
    if extra:
        parts.append("unexpected or extra " + ", ".join(extra))
    return "; ".join(parts)[:400]
