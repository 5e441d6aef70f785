"""Shards: ``--shard k/n`` parsing, the arguments' fingerprint and the deterministic split.

A command run with ``--shard k/n`` keeps the work units that the split gives shard ``k`` of
``n``. The split sorts the units by their recorded duration (longest first; a unit with no
recorded duration counts as the median of the known ones, or 1 s when none is known), ties
by a stable hash of the unit's id, and hands each unit to the least loaded shard (ties to the
lowest index). It reads no clock and no random source: every shard, given the same arguments,
the same units and the same recorded durations, computes the same split, and together the
shards cover every unit exactly once. ``arib.merge`` refuses shards whose arguments,
commit, durations or ``n`` differ.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from arib.ground.errors import UsageError

# Options that do not change what a shard measures: where its outputs go, how it talks to
# people, and the shard itself. Everything else is in the fingerprint.
NOT_FINGERPRINTED = frozenset({"shard", "out", "json", "html", "write", "quiet", "diffs",
                               "func", "partial", "verify_sample", "verify_cache"})


@dataclass(frozen=True)
class ShardSpec:
    """Shard ``k`` of ``n`` (1 <= k <= n)."""

    k: int
    n: int

    @classmethod
    def parse(cls, text: str) -> ShardSpec:
        """``'k/n'`` as a spec; anything else is a UsageError naming the value and the fix."""
        head, sep, tail = text.partition("/")
        try:
            k, n = int(head), int(tail)
        except ValueError:
            k = n = 0
        if not sep or n < 1 or not 1 <= k <= n:
            raise UsageError(f"--shard {text!r} is not a shard: the form is k/n with "
                             f"1 <= k <= n, e.g. --shard 1/4 ... --shard 4/4 on four machines")
        return cls(k, n)

    def __str__(self) -> str:
        return f"{self.k}/{self.n}"


def _digest(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, ensure_ascii=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def arguments(args: argparse.Namespace) -> dict[str, Any]:
    """The arguments every shard must share: all but the shard and the outputs."""
    return {key: value for key, value in sorted(vars(args).items())
            if key not in NOT_FINGERPRINTED}


@dataclass(frozen=True)
class Split:
    """One shard's share of a command's units, and what it was computed from."""

    spec: ShardSpec
    args: Mapping[str, Any]
    commit: str
    durations: Mapping[str, float] = field(default_factory=dict)  # recorded, by unit id
    # What was measured: the family, its distribution's installed version and the lock hash.
    identity: Mapping[str, str] = field(default_factory=dict)

    @property
    def fingerprint(self) -> str:
        """A digest of the shared arguments and the commit (equal in every shard)."""
        return _digest({"args": self.args, "commit": self.commit})

    def keep(self, units: Mapping[str, float | None]) -> frozenset[str]:
        """The ids of ``units`` (id -> recorded seconds, or None) that go to this shard."""
        known = [s for s in units.values() if s is not None]
        default = statistics.median(known) if known else 1.0
        weight = {u: default if s is None else s for u, s in units.items()}
        order = sorted(units, key=lambda u: (-weight[u], _digest(u), u))
        loads = [0.0] * self.spec.n
        mine = set()
        for unit in order:
            shard = min(range(self.spec.n), key=lambda i: (loads[i], i))
            loads[shard] += weight[unit]
            if shard == self.spec.k - 1:
                mine.add(unit)
        return frozenset(mine)

    def to_json(self) -> dict[str, Any]:
        """The shard's record: its spec, fingerprint, arguments, commit and durations digest."""
        return {"spec": str(self.spec), "k": self.spec.k, "n": self.spec.n,
                "fingerprint": self.fingerprint, "arguments": dict(self.args),
                "commit": self.commit, "durations": _digest(dict(self.durations)),
                **dict(self.identity)}


def make_split(args: argparse.Namespace, durations: Mapping[str, float] | None = None
               ) -> Split | None:
    """The split asked for by ``args.shard``, or None when the command is not sharded."""
    from arib.results import harness_commit

    if getattr(args, "shard", None) is None:
        return None
    return Split(ShardSpec.parse(args.shard), arguments(args), harness_commit(),
                 dict(durations or {}), measured_identity())


def measured_identity() -> dict[str, str]:
    """What a shard measured, which every shard of one merge must share: the family, the
    installed version of its distribution and the hash of the lock it was installed from."""
    from arib.execute import sdk_version
    from arib.ground.family import active_family
    from arib.results import lock_hash

    version = sdk_version()
    return {"family": active_family().name, "version": version, "lock": lock_hash(version)}


def survey_durations(folder: Path) -> dict[str, float]:
    """Seconds each ``lane:mutant`` took in the survey written to ``folder`` (empty if none)."""
    seconds: dict[str, float] = {}
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else ():
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if not isinstance(doc, dict) or doc.get("kind") != "arib-survey":
            continue
        for result in doc.get("results", ()):
            key = f"{doc['lane']}:{result['mutant_id']}"
            seconds[key] = seconds.get(key, 0.0) + float(result.get("duration_s", 0.0))
    return seconds


def run_durations(folder: Path, version: str, command: str) -> dict[str, float]:
    """Seconds recorded in the newest bench run of ``version`` in ``folder``: per check's
    admission (``command`` 'admit') or per ``check@lane`` cell ('bench'); empty if none."""
    from arib.results import run_glob

    for path in sorted(folder.glob(run_glob(version)), reverse=True)[:1]:
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
            if command == "admit":
                return {a["check_id"]: float(a["duration_s"]) for a in doc["admission"]}
            return {f"{f['invariant_id']}@{f['target']}": float(f["duration_s"])
                    for f in doc["findings"]}
        except (OSError, ValueError, KeyError, TypeError):
            return {}
    return {}
