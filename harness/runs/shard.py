"""Shards: ``--shard k/n`` parsing, the arguments' fingerprint and the deterministic split.

A command run with ``--shard k/n`` keeps the work units that the split gives shard ``k`` of
``n``. The split sorts the units by their recorded duration (longest first; a unit with no
recorded duration counts as the median of the known ones, or 1 s when none is known), ties
by a stable hash of the unit's id, and hands each unit to the least loaded shard (ties to the
lowest index). It reads no clock and no random source: every shard, given the same arguments,
the same units and the same recorded durations, computes the same split, and together the
shards cover every unit exactly once. ``arib.runs.merge`` refuses shards whose arguments,
commit, durations or ``n`` differ.

A unit is a key in memory: a check id (``admit``), a ``Cell`` (``bench``), a ``MutantKey`` or a
lane alone (``survey``); what is hashed and written is its one string form (``str()``). The
manifest a shard writes is transient (read by ``merge`` from the same commit, never
committed), so a manifest written before a unit's form changed need not stay readable.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from arib.ground.errors import UsageError
from arib.ground.files import atomic_write_text
from arib.ground.keys import Cell, MutantKey

# A unit of sharded work: a check id, a cell, a mutant on a lane, or a lane alone.
U = TypeVar("U", bound=Hashable)

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
    durations: Mapping[Any, float] = field(default_factory=dict)  # recorded, by unit
    # What was measured: the family, its distribution's installed version and the lock hash.
    identity: Mapping[str, str] = field(default_factory=dict)

    @property
    def fingerprint(self) -> str:
        """A digest of the shared arguments and the commit (equal in every shard)."""
        return _digest({"args": self.args, "commit": self.commit})

    def keep(self, units: Mapping[U, float | None]) -> frozenset[U]:
        """The ``units`` (unit -> recorded seconds, or None) that go to this shard; ties are
        broken by a hash of each unit's string form."""
        known = [s for s in units.values() if s is not None]
        default = statistics.median(known) if known else 1.0
        weight = {u: default if s is None else s for u, s in units.items()}
        order = sorted(units, key=lambda u: (-weight[u], _digest(str(u)), str(u)))
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
                "commit": self.commit,
                "durations": _digest({str(u): s for u, s in self.durations.items()}),
                **dict(self.identity)}


def make_split(args: argparse.Namespace, durations: Mapping[Any, float] | None = None
               ) -> Split | None:
    """The split asked for by ``args.shard``, or None when the command is not sharded."""
    from arib.ground.provenance import harness_commit

    if getattr(args, "shard", None) is None:
        return None
    return Split(ShardSpec.parse(args.shard), arguments(args), harness_commit(),
                 dict(durations or {}), measured_identity())


def measured_identity() -> dict[str, str]:
    """What a shard measured, which every shard of one merge must share: the family, the
    installed version of its distribution and the hash of the lock it was installed from."""
    from arib.execute import sdk_version
    from arib.ground.family import active_family
    from arib.ground.provenance import lock_hash

    version = sdk_version()
    return {"family": active_family().name, "version": version, "lock": lock_hash(version)}


def survey_durations(folder: Path) -> dict[MutantKey, float]:
    """Seconds each mutant on its lane took in the survey written to ``folder`` (empty if
    none)."""
    seconds: dict[MutantKey, float] = {}
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else ():
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if not isinstance(doc, dict) or doc.get("kind") != "arib-survey":
            continue
        for result in doc.get("results", ()):
            key = MutantKey(doc["lane"], result["mutant_id"])
            seconds[key] = seconds.get(key, 0.0) + float(result.get("duration_s", 0.0))
    return seconds


def _newest_run(folder: Path, version: str) -> dict[str, Any] | None:
    """The newest bench run of ``version`` in ``folder``; None when none can be read."""
    from arib.runs.results import run_glob

    for path in sorted(folder.glob(run_glob(version)), reverse=True)[:1]:
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return doc if isinstance(doc, dict) else None
    return None


def admission_durations(folder: Path, version: str) -> dict[str, float]:
    """Seconds each check's admission took in the newest bench run of ``version`` in
    ``folder``, by check id; empty if none."""
    doc = _newest_run(folder, version)
    try:
        return {a["check_id"]: float(a["duration_s"]) for a in doc["admission"]} if doc else {}
    except (KeyError, TypeError, ValueError):
        return {}


def cell_durations(folder: Path, version: str) -> dict[Cell, float]:
    """Seconds each cell took in the newest bench run of ``version`` in ``folder``; empty if
    none."""
    doc = _newest_run(folder, version)
    try:
        return {Cell.of(f): float(f["duration_s"]) for f in doc["findings"]} if doc else {}
    except (KeyError, TypeError, ValueError, UsageError):
        return {}


# The manifest a sharded run writes beside its output, and its reading back (`merge`).
MANIFEST = "shard.json"


def write_manifest(out: Path, command: str, split: Split, extra: Mapping[str, Any]) -> Path:
    """Write a shard's manifest into its output folder; returns its path."""
    path = out / MANIFEST
    doc = {"kind": "arib-shard", "command": command, "shard": split.to_json(), **extra}
    atomic_write_text(path, json.dumps(doc, indent=1, ensure_ascii=False) + "\n")
    return path


def read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise UsageError(f"shard output {str(path)!r} cannot be read ({exc}); pass the folder "
                         f"a `survey --shard k/n --write --out DIR` wrote") from None


def load_shards(paths: Sequence[Path]) -> list[tuple[Path, dict[str, Any]]]:
    """Each shard output with its manifest (a survey folder's shard.json, or the admission
    document itself), sorted by k; refuses shards that do not fit together."""
    shards = []
    for path in paths:
        manifest = path / MANIFEST if path.is_dir() else path
        doc = read_json(manifest) if manifest.is_file() else {}
        if not isinstance(doc, dict) or "shard" not in doc or "command" not in doc:
            raise UsageError(f"{str(path)!r} is not a shard's output (it holds no {MANIFEST} "
                             f"or shard record): the rule: merge takes what sharded runs "
                             f"wrote; fix: run `survey --shard k/n --write --out {path}` or "
                             f"`admit --shard k/n --json {path}`")
        shards.append((path, doc))
    check_compatible([m for _, m in shards], [str(p) for p, _ in shards])
    return sorted(shards, key=lambda s: int(s[1]["shard"]["k"]))


def check_compatible(manifests: Sequence[Mapping[str, Any]], names: Sequence[str]) -> None:
    """Refuse shards of different commands, n, arguments, commits or durations, and a k
    that is missing or given twice."""
    if not manifests:
        raise UsageError("merge needs shard outputs: pass every shard's folder")
    first, name0 = manifests[0], names[0]
    for m, name in zip(manifests[1:], names[1:], strict=True):
        _check_identity(first["shard"], name0, m["shard"], name)
        for what, a, b in (("command", first["command"], m["command"]),
                           ("n", first["shard"]["n"], m["shard"]["n"]),
                           ("recorded durations", first["shard"]["durations"],
                            m["shard"]["durations"])):
            if a != b:
                raise UsageError(f"shard {name!r} has {what} {b!r} but {name0!r} has {a!r}: "
                                 f"the rule: every shard runs the same command on the same "
                                 f"commit with the same n and durations; fix: run the shards "
                                 f"again alike")
        if m["shard"]["fingerprint"] != first["shard"]["fingerprint"]:
            args0, args = first["shard"]["arguments"], m["shard"]["arguments"]
            diff = sorted(k for k in {*args0, *args} if args0.get(k) != args.get(k))
            raise UsageError(
                f"shard {name!r} was run with other arguments than {name0!r} (differing: "
                + ", ".join(f"{k}={args.get(k)!r} vs {args0.get(k)!r}" for k in diff)
                + "): the rule: every shard gets the same arguments but --shard; fix: run "
                  "them again with the same arguments")
    n = int(first["shard"]["n"])
    ks = [int(m["shard"]["k"]) for m in manifests]
    twice = sorted({k for k in ks if ks.count(k) > 1})
    missing = sorted(set(range(1, n + 1)) - set(ks))
    if twice or missing:
        what = (f"shard {twice[0]}/{n} is given twice" if twice
                else f"shard {missing[0]}/{n} is missing")
        raise UsageError(f"{what} (got {', '.join(f'{k}/{n}' for k in sorted(ks))}): the "
                         f"rule: merge takes each of the {n} shards exactly once; fix: pass "
                         f"every shard's output once")


# What a shard measured (arib.runs.shard.measured_identity), with the name a refusal gives it.
IDENTITY = (("family", "family"), ("version", "version of the family's distribution"),
            ("lock", "lock hash"), ("commit", "harness commit"))


def _check_identity(first: Mapping[str, Any], name0: str, shard: Mapping[str, Any],
                    name: str) -> None:
    """Refuse a shard that measured another family, version, lock or harness commit."""
    for key, what in IDENTITY:
        a, b = first.get(key), shard.get(key)
        if a != b:
            raise UsageError(f"shard {name!r} has {what} {b!r} but {name0!r} has {a!r}: the "
                             f"rule: merged shards measured the same family version, installed "
                             f"from the same lock, with the same harness commit; fix: run "
                             f"shard {shard.get('spec', '?')} again in the environment of "
                             f"{name0!r} (`nox -s bench` installs it from the lock)")
