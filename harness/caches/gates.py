"""Passed sanity gates kept across runs: a check's clean reference reruns that all held and its
forced-broken mutant's run that was violated, keyed like a pair's verdict.

Admission runs two gates per check before any mutant is judged (``arib.admission``): the check
must hold on the clean reference in every rerun, and the forced-broken mutant of that
reference must be violated. An entry keeps what later phases read of a passed gate: the clean
reruns' verdicts and their longest duration (it sets the time limits of the mutants judged on
the reference lane), the forced run's verdicts, and the evidence they rest on (``proof_of``
each run). Its key (``arib.caches.keys.gate_key``) names the check's sources and helpers,
``arib.execute``, the reference's modules and configuration, the forced mutant's own source,
the Python and SDK versions, the reruns, seed, parameters and time-limit rule: any change of
them misses.

Only a passed gate is kept; one that failed is never written (admission stops with GateError,
as without a cache). The store is the verdict cache's (``gates/`` under its root): ``--no-cache``
bypasses it, a store discarded for the run answers nothing, and a hit is re-judged by the same
seeded sample (``AdmissionCache.sampled``), a disagreement recorded by ``AdmissionCache.checked``
so that the caller discards the store and judges everything again. An entry whose evidence
does not give "passed" is refused (run again), as a pair's is.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Generic, Protocol, TypeVar

from arib.caches.verdicts import AdmissionCache, Lookup, proof_of
from arib.ground.files import atomic_write_text
from arib.ground.model import CleanBase, Finding, Verdict


class GateStatus(enum.Enum):
    """How a check's two sanity gates ended."""

    PASSED = "passed"  # every clean rerun held and every forced run was violated
    NOT_APPLICABLE = "not_applicable"  # the clean reference abstained: nothing to admit
    FAILED = "failed"  # a clean rerun did not hold, or a forced run was not violated


def gate_status(clean: Sequence[Verdict], forced: Sequence[Verdict]) -> GateStatus:
    """The gates' outcome from the clean reruns' and the forced runs' verdicts."""
    if clean and all(v is Verdict.NOT_APPLICABLE for v in clean):
        return GateStatus.NOT_APPLICABLE
    if clean and forced and all(v is Verdict.HELD for v in clean) and all(
            v is Verdict.VIOLATED for v in forced):
        return GateStatus.PASSED
    return GateStatus.FAILED


@dataclass(frozen=True)
class GateEntry:
    """A check's passed gates on its reference lane: the clean base, the forced verdicts, and
    each run's evidence."""

    base: CleanBase
    forced: tuple[Verdict, ...]
    proof: Mapping[str, Any]  # {"clean": proof_of(...), "forced": proof_of(...)}

    @classmethod
    def of(cls, base: CleanBase, clean: Sequence[Finding], forced: Sequence[Finding]
           ) -> GateEntry:
        """The entry of gates that ran now: ``base`` is ``clean``'s clean base."""
        return cls(base, tuple(f.verdict for f in forced),
                   {"clean": proof_of(clean), "forced": proof_of(forced)})

    @property
    def status(self) -> GateStatus:
        """How the gates ended, by their verdicts."""
        return gate_status(self.base.verdicts, self.forced)

    def contradiction(self) -> str | None:
        """Why the entry's evidence does not show passed gates (None: it does)."""
        if self.status is not GateStatus.PASSED:
            return f"its gates are {self.status.value!r}, and only passed gates are kept"
        try:
            for role, verdicts in (("clean", self.base.verdicts), ("forced", self.forced)):
                runs = self.proof[role]
                if tuple(Verdict(run["verdict"]) for run in runs) != verdicts:
                    return f"its {role} verdicts are not its evidence's"
                if any((Verdict(run["verdict"]) is Verdict.VIOLATED)
                       != (int(run.get("violating_trials", 0)) > 0) for run in runs):
                    return f"a {role} run's verdict disagrees with its violating trials"
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            return f"its evidence cannot be read ({exc!r})"
        return None

    def to_json(self) -> dict[str, Any]:
        """The JSON form of this entry."""
        return {"base": self.base.to_json(), "forced": [v.value for v in self.forced],
                "proof": dict(self.proof)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> GateEntry:
        """An entry from its JSON form."""
        proof = data["proof"]
        if not isinstance(proof, dict):
            raise TypeError(f"proof must be a JSON object, not {proof!r:.80}")
        return cls(CleanBase.from_json(data["base"]),
                   tuple(Verdict(v) for v in data["forced"]), proof)


class Kept(Protocol):
    """An entry kept for one check's clean runs on one lane (a passed gate, a violated base)."""

    @property
    def base(self) -> CleanBase: ...

    def contradiction(self) -> str | None: ...

    def to_json(self) -> dict[str, Any]: ...


K = TypeVar("K", bound=Kept)


class KeptStore(Generic[K]):
    """Entries in one folder of a verdict cache's root, one file per key, answering nothing
    when that cache has no root or was discarded for the run; lookups are counted."""

    folder: ClassVar[str]

    def __init__(self, verdicts: AdmissionCache) -> None:
        self.verdicts = verdicts
        self.counts = {state.value: 0 for state in Lookup}

    def parse(self, data: Mapping[str, Any]) -> K:
        """An entry from its JSON form."""
        raise NotImplementedError

    def lookup(self, key: str, check_id: str, lane: str) -> tuple[K | None, Lookup]:
        """The entry under ``key`` for ``check_id`` on ``lane`` and how the lookup ended
        (counted): an entry for another check or lane, or one that does not load, is
        unreadable; one whose evidence does not give what it says is contradicted."""
        entry, state = self._load(key, check_id, lane)
        self.counts[state.value] += 1
        return entry, state

    def _load(self, key: str, check_id: str, lane: str) -> tuple[K | None, Lookup]:
        root = self.verdicts.root
        if root is None or self.verdicts.discarded:
            return None, Lookup.MISS
        try:
            text = self._path(root, key).read_text()
        except FileNotFoundError:
            return None, Lookup.MISS
        except (OSError, UnicodeDecodeError):
            return None, Lookup.UNREADABLE
        try:
            entry = self.parse(json.loads(text))
        except (ValueError, KeyError, TypeError, AttributeError):
            return None, Lookup.UNREADABLE
        if (entry.base.check_id, entry.base.lane) != (check_id, lane):
            return None, Lookup.UNREADABLE
        if entry.contradiction() is not None:
            return None, Lookup.CONTRADICTED
        return entry, Lookup.HIT

    def sampled(self, key: str) -> bool:
        """Whether this run runs the hit under ``key`` again (the verdict cache's sample)."""
        return self.verdicts.sampled(key)

    def write(self, key: str, entry: K) -> None:
        """Keep ``entry`` under ``key``, atomically, when its evidence gives what it says;
        nothing without a cache."""
        root = self.verdicts.root
        if root is None or entry.contradiction() is not None:
            return
        atomic_write_text(self._path(root, key), json.dumps(entry.to_json(), indent=1))
        self.verdicts.written(key)

    def remove(self, key: str) -> None:
        """Delete the entry under ``key`` if there is one (a run contradicted it); nothing
        without a cache."""
        root = self.verdicts.root
        if root is not None:
            self._path(root, key).unlink(missing_ok=True)

    def _path(self, root: Path, key: str) -> Path:
        return root / self.folder / f"{key}.json"


class GateCache(KeptStore[GateEntry]):
    """Passed gates in the ``gates`` folder of a verdict cache's root."""

    folder = "gates"

    def parse(self, data: Mapping[str, Any]) -> GateEntry:
        """A gate entry from its JSON form."""
        return GateEntry.from_json(data)
