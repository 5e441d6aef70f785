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
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from arib.parity.steps import Read


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


# The table. Empty, by measurement: on openai-agents 0.19.2 and 0.24.0, with the scripted model of
# arib.parity.scripted, every value in every stored item is one the workflow chose (item and
# call ids come from the workflow's counter, handoff outputs are fixed JSON). The SDK's own
# nondeterministic values (uuid4 occurrence keys of run items, trace ids) never enter a stored
# item or a model input: the 15 reference workflows and 40 generated cases give byte-identical
# replay digests across 16 lanes, two event loops, repeated runs and both SDK versions. So no
# workflow has a ``replay_hash_normalized`` today; a rule is added here, with its reason, the
# day a backend or SDK version stores such a value (e.g. a server-assigned id or timestamp).
RULES: tuple[NormalizationRule, ...] = ()


def normalize_reads(
    reads: Sequence[Read],
    *,
    lane: str,
    domain: str,
    rules: Sequence[NormalizationRule] | None = None,
) -> tuple[list[Read], tuple[str, ...]]:
    """The reads with every applicable rule applied, and the ids of the rules that changed any."""
    from arib.parity.steps import Read

    active = [r for r in (RULES if rules is None else rules) if r.applies(lane, domain)]
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


def rules_table() -> list[dict[str, str]]:
    """The rules as JSON, for the report."""
    return [r.to_json() for r in RULES]
