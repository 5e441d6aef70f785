"""Equivalence classes kept across runs: one entry per module source and set of mutants.

A survey compares the compiled unit of every mutant with the original's and with every other
mutant's (``arib.mutants.equivalence.classify``): one compile of the whole mutated module per
mutant, about 9 s over every lane of one SDK version, again on every run. What it finds
depends only on:

- the module's source text (its SHA-256);
- each mutant's id, qualified name and mutated source (their SHA-256);
- the classifier's own source (``arib.mutants.equivalence``);
- the Python that compiles (its version, implementation and bytecode magic number).

An entry is keyed on all of them and holds the equivalent and duplicate mutants found. The
file name the classifier compiles under is not an input: the compared shapes leave it out,
so a key names no path and an entry is shared between machines. Before an entry is written,
its JSON text is decoded again and compared with what was found; one that would not come back
equal is not kept. An entry that fails to load, or that names a mutant not in the set, is
classified again and counted (``unreadable``), never trusted.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from arib.caches.verdicts import DEFAULT_DIR, Lookup, cache_key, source_hash
from arib.ground.files import atomic_write_text
from arib.ground.model import MutantStatus
from arib.mutants.base import MutantSpec
from arib.mutants.equivalence import Equivalence, classify

FORMAT = 1
_FOUND = (MutantStatus.EQUIVALENT, MutantStatus.DUPLICATE)


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def equivalence_key(original: str, mutants: Sequence[MutantSpec]) -> str:
    """The key of the classes found among ``mutants`` of the module whose text is
    ``original``, by this classifier and this Python."""
    named = sorted([m.id, m.qualname, _sha(m.source)] for m in mutants if m.source is not None)
    return cache_key(kind="equivalence", format=FORMAT, source=_sha(original),
                     mutants=_sha(json.dumps(named)),
                     classifier=source_hash("arib.mutants.equivalence"),
                     python=list(sys.version_info[:3]), implementation=sys.implementation.name,
                     magic=importlib.util.MAGIC_NUMBER.hex())


def encode(found: dict[str, Equivalence]) -> dict[str, Any]:
    """The JSON form of what ``classify`` found."""
    return {"format": FORMAT, "found": [found[k].to_json() for k in sorted(found)]}


def decode(data: Any, mutants: Sequence[MutantSpec]) -> dict[str, Equivalence]:
    """What ``encode`` wrote, checked against ``mutants``; ValueError when it does not fit."""
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ValueError(f"not an equivalence entry of format {FORMAT}")
    ids = {m.id for m in mutants if m.source is not None}
    out: dict[str, Equivalence] = {}
    for item in data["found"]:
        mutant_id, status, reason, of = (item["mutant_id"], MutantStatus(item["status"]),
                                         item["reason"], item["of"])
        if (mutant_id not in ids or status not in _FOUND or not isinstance(reason, str)
                or (of is None) != (status is MutantStatus.EQUIVALENT)
                or (of is not None and (of not in ids or of == mutant_id))):
            raise ValueError(f"entry {item!r:.80} does not fit these mutants")
        out[mutant_id] = Equivalence(mutant_id, status, reason, of)
    return out


class EquivalenceStore:
    """A folder of classifications, one JSON file per ``equivalence_key``."""

    def __init__(self, root: Path | None = DEFAULT_DIR) -> None:
        self.root = None if root is None else root / "equivalence"
        self.counts = {state.value: 0 for state in Lookup}
        self.kept = 0

    def classify(self, original: str, mutants: Sequence[MutantSpec],
                 filename: str = "<module>") -> dict[str, Equivalence]:
        """``arib.mutants.equivalence.classify``, from the entry kept for these inputs where one
        loads, else computed and kept."""
        key = equivalence_key(original, mutants) if self.root is not None else ""
        found, state = self._load(key, mutants)
        self.counts[state.value] += 1
        if found is None:
            found = classify(original, mutants, filename)
            self._keep(key, mutants, found)
        return found

    def _load(self, key: str, mutants: Sequence[MutantSpec]
              ) -> tuple[dict[str, Equivalence] | None, Lookup]:
        if self.root is None:
            return None, Lookup.MISS
        try:
            text = (self.root / f"{key}.json").read_text(encoding="utf-8")
        except FileNotFoundError:
            return None, Lookup.MISS
        except (OSError, UnicodeDecodeError):
            return None, Lookup.UNREADABLE
        try:
            return decode(json.loads(text), mutants), Lookup.HIT
        except (ValueError, KeyError, TypeError):
            return None, Lookup.UNREADABLE

    def _keep(self, key: str, mutants: Sequence[MutantSpec],
              found: dict[str, Equivalence]) -> None:
        if self.root is None:
            return
        try:
            text = json.dumps(encode(found), ensure_ascii=False)
            if decode(json.loads(text), mutants) != found:
                return
            self.root.mkdir(parents=True, exist_ok=True)
            atomic_write_text(self.root / f"{key}.json", text)
        except (ValueError, TypeError, OSError):
            return  # a folder that cannot be written: the next run classifies again
        self.kept += 1

    def describe(self) -> str:
        """One line: how each module's equivalent and duplicate mutants were had."""
        if self.root is None:
            return "equivalence: no cache (--no-cache), every module compared"
        hits, misses = self.counts[Lookup.HIT.value], self.counts[Lookup.MISS.value]
        unreadable = self.counts[Lookup.UNREADABLE.value]
        again = f" ({unreadable} unreadable, compared again)" if unreadable else ""
        return (f"equivalence: {hits} of {hits + misses + unreadable} lane(s) from the cache, "
                f"{misses + unreadable} compared{again}, {self.kept} kept")


_STORE: EquivalenceStore | None = None  # the store of the running survey


def classified(original: str, mutants: Sequence[MutantSpec],
               filename: str = "<module>") -> dict[str, Equivalence]:
    """What ``classify`` finds, through the running command's store where one is set."""
    if _STORE is None:
        return classify(original, mutants, filename)
    return _STORE.classify(original, mutants, filename)


@contextlib.contextmanager
def equivalence_cache(no_cache: bool) -> Iterator[EquivalenceStore]:
    """Within the block, keep equivalence classes in the cache folder (none with
    ``--no-cache``); the store used before comes back after it."""
    global _STORE
    previous, _STORE = _STORE, EquivalenceStore(None if no_cache else DEFAULT_DIR)
    try:
        yield _STORE
    finally:
        _STORE = previous
