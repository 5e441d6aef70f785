"""The evidence of one violation, shown once: findings whose evidence is the same, grouped.

Two lanes that break an invariant the same way give samples and operations that differ only
in each trial's random ids and seeds (``msg_768a7bae8ba9376d`` on one lane,
``msg_508ff598eef52a59`` on the next). With those masked, the evidence is compared as text;
a report shows it once and names every lane that shares it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable, Iterable, Mapping
from typing import Any, TypeVar

# A run of hex digits with at least one digit, 8 or more long: a trial's random id or a seed.
_VOLATILE = re.compile(r"(?<![0-9a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{8,}(?![0-9a-f])")

T = TypeVar("T")


def mask(text: str) -> str:
    """``text`` with random ids and seeds replaced by ``#``: 'fc_768a7bae8ba9376d' -> 'fc_#'."""
    return _VOLATILE.sub("#", text)


def evidence_key(finding: Mapping[str, Any]) -> tuple[Hashable, ...]:
    """What a finding's evidence shows (samples, operations, reason, traceback), ids masked."""
    return (
        finding["invariant_id"],
        tuple(mask(s[:300]) for s in finding.get("samples", [])[:3]),
        tuple(mask(op) for op in finding.get("ops") or ()),
        mask(finding.get("reason") or ""),
        mask((finding.get("traceback") or "").strip()[-1500:]),
    )


def grouped(items: Iterable[T], key: Callable[[T], Hashable]) -> list[list[T]]:
    """``items`` in groups of equal ``key``, groups and members in order of first appearance."""
    groups: dict[Hashable, list[T]] = {}
    for item in items:
        groups.setdefault(key(item), []).append(item)
    return list(groups.values())


def lane_list(lanes: Iterable[str]) -> str:
    """Lane names as Markdown code, comma-separated: '`a`, `b`'."""
    return ", ".join(f"`{lane}`" for lane in lanes)
