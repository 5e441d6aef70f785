"""Admission cache: a mutant's status under a check, keyed by everything that could change it.

An entry keeps, beside the status, the evidence it rests on (``proof``: each rerun's verdict,
modes, counts and a sample), and is refused when that evidence contradicts its status (a
status 'killed' over a held rerun, runs that are not the proof's): judged again, counted as
``contradicted``. An entry written before it kept its evidence is refused the same way.

A run also re-judges a seeded sample of its hits (``verify``: the share, 0..1; the sample is
a hash of the run's seed and the key, so the same run samples the same entries). One
disagreement between an entry and its re-judgement (``disagree``) makes the caller discard
the store for the run (``discard``: no lookup answers any more; what is judged again is
written over it) and judge everything again. A result written by this run is never in its
own sample. The bench takes the sample after its cells (``unsampled``, then ``reset_counts``
and admission again: arib.runs.bench).
"""

from __future__ import annotations

import contextlib
import enum
import functools
import hashlib
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from arib.ground.files import atomic_write_text
from arib.ground.model import MutantResult, Verdict, mutant_status, recorded_timeout
from arib.ground.sources import module_source

DEFAULT_DIR = Path(os.environ.get("ARIB_CACHE_DIR", ".arib-cache"))


@functools.cache
def source_hash(*modules: str) -> str:
    """SHA-256 of the source of modules (the installed file, not a copy).

    Read once per process: a run keys thousands of pairs with the same few modules, and every
    key of one run then names the source as it was when the run began.
    """
    digest = hashlib.sha256()
    for name in modules:
        try:  # read without importing: a key never imports a backend (arib.ground.sources)
            digest.update(module_source(name).encode())
        except (OSError, SyntaxError, UnicodeDecodeError) as exc:
            digest.update(f"<{name}: {exc!r}>".encode())
    return digest.hexdigest()


def cache_key(**parts: Any) -> str:
    """A stable key from named parts."""
    text = json.dumps(parts, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


class Lookup(enum.Enum):
    """How a cache lookup ended."""

    HIT = "hit"
    MISS = "miss"  # no entry under the key (or no cache, or a store discarded for the run)
    UNREADABLE = "unreadable"  # an entry that failed to load: judged again, never trusted
    CONTRADICTED = "contradicted"  # its own evidence contradicts its status: judged again


# The share of hits a run re-judges by default (``--verify-cache`` makes it all of them).
DEFAULT_VERIFY = 0.03


def proof_of(findings: Any) -> list[dict[str, Any]]:
    """The evidence a status rests on: each rerun's verdict, trials, modes, whether it timed
    out, counts, a sample."""
    return [{"verdict": f.verdict.value, "trials": f.trials,
             "violating_trials": f.violating_trials, "modes": dict(f.modes),
             "timed_out": f.timed_out,
             "counts": {k: v for k, v in f.counts.to_json().items() if v},
             "sample": (f.samples[0] if f.samples else f.reason or "")[:300]}
            for f in findings]


def contradiction(result: MutantResult, proof: Any, hang_kills: bool) -> str | None:
    """Why ``proof`` does not support ``result``'s status (None when it does)."""
    if not isinstance(proof, list) or not proof:
        return "it keeps no evidence for its status"
    try:
        verdicts = tuple(Verdict(run["verdict"]) for run in proof)
        # an entry written before ``timed_out`` existed marks a timeout the old way
        timeouts = sum(1 for run in proof if recorded_timeout(run))
        for run in proof:
            violated = Verdict(run["verdict"]) is Verdict.VIOLATED
            if violated != (int(run.get("violating_trials", 0)) > 0):
                return (f"a rerun's verdict {run['verdict']!r} with "
                        f"{run.get('violating_trials', 0)} violating trial(s)")
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        return f"its evidence cannot be read ({exc!r})"
    if verdicts != result.runs:
        return (f"its runs {[v.value for v in result.runs]} are not its evidence's "
                f"{[v.value for v in verdicts]}")
    status = mutant_status(list(verdicts), result.expected, timeouts, hang_kills=hang_kills)
    if status is not result.status:
        return (f"status {result.status.value!r}, but its evidence "
                f"({', '.join(v.value for v in verdicts)}) gives {status.value!r}")
    return None


class AdmissionCache:
    """A folder of JSON files, one per (check, mutant, sources, versions, reruns) key.

    Safe to share between runs and machines: entries are written atomically, and a key holds
    no absolute path, process id or host name. An entry that fails to load is judged again.
    """

    def __init__(self, root: Path | None = DEFAULT_DIR, verify: float = DEFAULT_VERIFY,
                 seed: int = 0) -> None:
        self.root = root
        self.verify = min(1.0, max(0.0, verify))
        self.seed = seed
        self.counts: dict[str, int] = {}
        self.reset_counts()
        self.disagreements: list[str] = []
        self.discarded = False
        # Entries this run loaded or wrote, with their evidence: each is read from disk at most
        # once (an entry's result never changes under its key, so another run's write of it
        # changes nothing).
        self._known: dict[str, tuple[MutantResult, Any, bool]] = {}
        self._written: set[str] = set()  # keys this run wrote: judged now, never sampled

    def lookup(self, key: str, hang_kills: bool | None = None
               ) -> tuple[MutantResult | None, Lookup]:
        """The cached result under ``key`` and how the lookup ended (counted in ``counts``):
        refused (CONTRADICTED) when its evidence does not give its status (``hang_kills``:
        whether a timeout is a kill for the check; None: as the entry recorded it)."""
        result, state = self._load(key, hang_kills)
        self.counts[state.value] += 1
        return result, state

    def _load(self, key: str, hang_kills: bool | None = None
              ) -> tuple[MutantResult | None, Lookup]:
        if self.root is None or self.discarded:
            return None, Lookup.MISS
        if key not in self._known:
            path = self.root / f"{key}.json"
            try:
                text = path.read_text()
            except FileNotFoundError:
                return None, Lookup.MISS
            except (OSError, UnicodeDecodeError):
                return None, Lookup.UNREADABLE
            try:
                data = json.loads(text)
                self._known[key] = (MutantResult.from_json(data), data.get("proof"),
                                    bool(data.get("hang_kills")))
            except (ValueError, KeyError, TypeError, AttributeError):
                return None, Lookup.UNREADABLE
        result, proof, recorded = self._known[key]
        if contradiction(result, proof, recorded if hang_kills is None else hang_kills):
            return None, Lookup.CONTRADICTED
        return result, Lookup.HIT

    def why_refused(self, key: str, hang_kills: bool) -> str | None:
        """Why the entry under ``key`` is refused (None: it is not, or there is none)."""
        if key not in self._known:
            return None
        result, proof, _ = self._known[key]
        return contradiction(result, proof, hang_kills)

    def holds(self, key: str) -> bool:
        """Whether an entry under ``key`` loads and its evidence gives its status (not
        counted as a lookup)."""
        return self._load(key)[1] is Lookup.HIT

    def sampled(self, key: str) -> bool:
        """Whether this run re-judges the hit under ``key`` (a seeded share ``verify``); never
        one this run wrote (``written``)."""
        if key in self._written:
            return False
        if self.verify >= 1.0:
            return True
        draw = hashlib.sha256(f"{self.seed}:{key}".encode()).digest()
        return int.from_bytes(draw[:8], "big") < self.verify * 2 ** 64

    def checked(self, what: str, cached: enum.Enum, judged: enum.Enum) -> None:
        """Record the re-judgement of a sampled hit: ``what`` names the pair (or the gates,
        ``arib.caches.gates``), ``cached`` and ``judged`` are its status then and now."""
        self.counts["verified"] += 1
        if cached is judged:
            self.counts["agreed"] += 1
        else:
            self.disagreements.append(f"{what}: cached {cached.value}, judged {judged.value}")

    def written(self, key: str) -> None:
        """Note that this run wrote the entry under ``key`` (a pair, a gate, a base)."""
        self._written.add(key)

    @contextlib.contextmanager
    def unsampled(self) -> Iterator[None]:
        """Within: no hit is re-judged (the share is 0); the share is restored on exit."""
        share, self.verify = self.verify, 0.0
        try:
            yield
        finally:
            self.verify = share

    def reset_counts(self) -> None:
        """Count lookups from nothing again (before a second admission of the same run, which
        looks up every entry again: its counts are the run's)."""
        self.counts = {state.value: 0 for state in Lookup}
        self.counts.update(verified=0, agreed=0)

    def discard(self) -> None:
        """Answer no lookup for the rest of the run (what is judged again is written)."""
        self.discarded = True
        self._known.clear()

    def describe(self) -> str:
        """One line: hits, entries re-judged and how they agreed, entries refused."""
        c = self.counts
        if self.root is None:
            return "verdict cache: none (--no-cache), every pair judged"
        line = (f"verdict cache: {c['hit']} hits, {c['miss']} misses; {c['verified']} hits "
                f"re-judged ({self.verify:.0%} sample, seed {self.seed}): {c['agreed']} agreed")
        if c["contradicted"] or c["unreadable"]:
            line += (f"; {c['contradicted']} refused (evidence contradicts status, or none), "
                     f"{c['unreadable']} unreadable: judged again")
        if self.disagreements:
            line += (f"; {len(self.disagreements)} disagreed ({self.disagreements[0]}): the "
                     f"store was discarded for the run and everything judged again")
        return line

    def get(self, key: str) -> MutantResult | None:
        """The cached result under ``key``, or None (no cache, no entry, or unreadable)."""
        return self.lookup(key)[0]

    def killer(self, hint: str) -> str | None:
        """The check that killed a mutant last time (a hint for the order of checks, never a
        verdict), or None."""
        if self.root is None:
            return None
        try:
            text = (self.root / "killers" / f"{hint}.txt").read_text().strip()
        except (OSError, UnicodeDecodeError):
            return None
        return text or None

    def remember_killer(self, hint: str, check_id: str) -> None:
        """Remember ``check_id`` as the killer under ``hint``, atomically."""
        if self.root is not None and self.killer(hint) != check_id:
            atomic_write_text(self.root / "killers" / f"{hint}.txt", check_id + "\n")

    def put(self, key: str, result: MutantResult, proof: list[dict[str, Any]],
            hang_kills: bool) -> None:
        """Store ``result`` under ``key`` with the evidence it rests on (``proof_of`` its
        reruns' findings), atomically (nothing when there is no cache)."""
        if self.root is None:
            return
        self.root.mkdir(parents=True, exist_ok=True)
        entry = {**result.to_json(), "proof": proof, "hang_kills": hang_kills}
        atomic_write_text(self.root / f"{key}.json", json.dumps(entry, indent=1))
        self.written(key)
        if not self.discarded:
            self._known[key] = (result, proof, hang_kills)
