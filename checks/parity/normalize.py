"""Normalization rules: the written table of values the parity gate may ignore, and why.

A rule exists only where the SDK or a backend inserts a value that is nondeterministic by
design (a generated id, a timestamp) and so cannot be equal between two runs. Each rule names
the field it rewrites, the lanes and domains it applies to, and its reason. ``replay_hash``
always covers the raw reads; ``replay_hash_normalized`` is computed only for a workflow where a
rule actually rewrote something, and then it is that workflow's parity hash.

A rule must never hide a divergence: it replaces a value by a placeholder that keeps its type
and position, it never drops an item, and it never reorders.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from arib.checks.parity.records import Read


@dataclass(frozen=True)
class NormalizationRule:
    """One written rule: where it applies, what it rewrites, and why."""

    id: str
    field: str
    reason: str
    lanes: str = "*"
    domains: str = "*"
    pattern: str = ""

    def applies(self, lane: str, domain: str) -> bool:
        """Whether this rule covers ``lane`` and ``domain``."""
        return _matches(self.lanes, lane) and _matches(self.domains, domain)

    def rewrite(self, item: Any) -> tuple[Any, bool]:
        """``item`` with the field replaced by a placeholder where the pattern matches."""
        if not isinstance(item, dict) or self.field not in item:
            return item, False
        value = item[self.field]
        if not isinstance(value, str) or not re.fullmatch(self.pattern, value):
            return item, False
        return {**item, self.field: f"<normalized:{self.id}>"}, True

    def to_json(self) -> dict[str, str]:
        """The JSON form of this rule."""
        return {
            "id": self.id,
            "field": self.field,
            "pattern": self.pattern,
            "lanes": self.lanes,
            "domains": self.domains,
            "reason": self.reason,
        }


def _matches(selector: str, value: str) -> bool:
    return selector == "*" or value in selector.split(",")


def normalize_reads(
    reads: Sequence[Read],
    *,
    lane: str,
    domain: str,
    rules: Sequence[NormalizationRule],
) -> tuple[list[Read], tuple[str, ...]]:
    """The reads with every applicable rule of ``rules`` (a family's written table) applied,
    and the ids of the rules that changed any."""
    active = [r for r in rules if r.applies(lane, domain)]
    if not active:
        return list(reads), ()
    used: set[str] = set()
    out: list[Read] = []
    for read in reads:
        items = []
        for item in read.items:
            for rule in active:
                item, changed = rule.rewrite(item)
                if changed:
                    used.add(rule.id)
            items.append(item)
        out.append(Read(read.label, items))
    if not used:
        return list(reads), ()
    return out, tuple(sorted(used))

