"""Clean bases that were violated in every rerun, kept across admissions: their mutants are not
judgeable there, and need not be found so again by running the clean lane each time.

Admission runs a check's clean base on every real lane that has paired mutants (``arib.admission``,
step 3). Where the real backend itself breaks the invariant (ARIB-CONC-003 on SQLiteSession,
whose add_items([]) after close() is accepted silently), every rerun is violated, no mutant of
that lane can be judged, and the base ran for nothing but to say so again: three children per
cell and admission.
An entry keeps such a base and the evidence it rests on (``proof_of`` each rerun), under a key
(``arib.caches.keys.base_key``) naming the check's sources and description, the lane's module and
configuration, the family's targets, the Python and SDK versions, the reruns, seed, parameters,
time-limit rule and the source of what runs the bases: any change of them misses.

Kept only when every rerun was violated, on a lane that needs no server (a server's version and
health are not in the key): a base that held, abstained, raised, timed out or was violated in
some reruns only runs again each time, as before there was a store. Keeping a base that did not
hold errs on the side the admission already takes for it (its mutants are not judged there); a
base that held is never kept here (a held base's mutants are judged, and their cached verdicts
are kept by the verdict cache). The store is the verdict cache's (``bases/`` under its root):
``--no-cache`` bypasses it, a store discarded for the run answers nothing, and a hit is run
again by the same seeded sample (``AdmissionCache.sampled``); if it holds now, the disagreement
is recorded (``AdmissionCache.checked``) and the caller discards the store and admits everything
again. An entry whose evidence does not show every rerun violated is refused (run again).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from arib.caches.gates import KeptStore
from arib.caches.verdicts import proof_of
from arib.ground.keys import Cell
from arib.ground.model import CleanBase, Finding, Verdict


class Judgeability(enum.Enum):
    """Whether a lane's clean base lets its mutants be judged (compared when a hit is re-run)."""

    JUDGEABLE = "judgeable"
    NOT_JUDGEABLE = "not_judgeable"

    @classmethod
    def of(cls, base: CleanBase) -> Judgeability:
        """The judgeability of ``base``."""
        return cls.JUDGEABLE if base.judgeable else cls.NOT_JUDGEABLE


def keepable(base: CleanBase) -> bool:
    """Whether a clean base that ran now may be kept: every rerun was violated."""
    return (bool(base.verdicts) and not base.cached and not base.reused
            and all(v is Verdict.VIOLATED for v in base.verdicts))


@dataclass(frozen=True)
class BaseEntry:
    """One check's clean base on one lane, violated in every rerun, with each rerun's
    evidence."""

    base: CleanBase
    proof: Sequence[Mapping[str, Any]]

    @classmethod
    def of(cls, base: CleanBase, findings: Sequence[Finding]) -> BaseEntry:
        """The entry of a base that ran now from ``findings``, its reruns."""
        return cls(base, proof_of(findings))

    def contradiction(self) -> str | None:
        """Why the entry's evidence does not show a base violated in every rerun (None: it
        does)."""
        if not keepable(self.base):
            return "its verdicts are not all 'violated', and only such bases are kept"
        try:
            if tuple(Verdict(run["verdict"]) for run in self.proof) != self.base.verdicts:
                return "its verdicts are not its evidence's"
            if any(int(run.get("violating_trials", 0)) <= 0 for run in self.proof):
                return "a rerun is violated without a violating trial"
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            return f"its evidence cannot be read ({exc!r})"
        return None

    def to_json(self) -> dict[str, Any]:
        """The JSON form of this entry."""
        return {"base": self.base.to_json(), "proof": [dict(run) for run in self.proof]}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> BaseEntry:
        """An entry from its JSON form."""
        proof = data["proof"]
        if not isinstance(proof, list):
            raise TypeError(f"proof must be a JSON list, not {proof!r:.80}")
        return cls(CleanBase.from_json(data["base"]), tuple(proof))


class BaseCache(KeptStore[BaseEntry]):
    """Violated clean bases in the ``bases`` folder of a verdict cache's root."""

    folder = "bases"

    def parse(self, data: Mapping[str, Any]) -> BaseEntry:
        """A base entry from its JSON form."""
        return BaseEntry.from_json(data)

    def settle(self, key: str, base: CleanBase, findings: Sequence[Finding],
               cached: BaseEntry | None) -> None:
        """After ``base`` ran now under ``key`` (from ``findings``): compare it with ``cached``,
        the hit the sample ran again (a disagreement is recorded on the verdict cache), and
        keep it, atomically, when every rerun was violated (also when the store is discarded
        for the run: what is judged again is written); otherwise an entry kept under ``key``
        before is removed, so that no later run reuses what this one contradicted. Nothing
        without a cache."""
        if cached is not None:
            self.verdicts.checked(f"clean base of {base.check_id} on {base.lane}",
                                  Judgeability.of(cached.base), Judgeability.of(base))
        entry = BaseEntry.of(base, findings)
        if entry.contradiction() is None:
            self.write(key, entry)
        else:
            self.remove(key)


@dataclass(frozen=True)
class BasePlan:
    """The key of each cell whose clean base may be kept, the kept bases the store answers for
    (not run), and the hits the sample runs again (run, then compared)."""

    store: BaseCache
    keys: Mapping[Cell, str]
    hits: Mapping[Cell, BaseEntry]
    verifying: Mapping[Cell, BaseEntry]

    @classmethod
    def of(cls, store: BaseCache, keys: Mapping[Cell, str]) -> BasePlan:
        """Look up every cell of ``keys`` in ``store``; a hit the sample draws is run again."""
        hits: dict[Cell, BaseEntry] = {}
        verifying: dict[Cell, BaseEntry] = {}
        for cell, key in keys.items():
            entry, _ = store.lookup(key, cell.check_id, cell.lane)
            if entry is not None:
                (verifying if store.sampled(key) else hits)[cell] = entry
        return cls(store, dict(keys), hits, verifying)
