"""Admission cache: a mutant's status under a check, keyed by everything that could change it."""

from __future__ import annotations

import enum
import functools
import hashlib
import json
import os
from pathlib import Path
from typing import Any

from harness.ground.model import MutantResult
from harness.ground.sources import module_source
from harness.results import atomic_write_text

DEFAULT_DIR = Path(os.environ.get("ARIB_CACHE_DIR", ".arib-cache"))


@functools.cache
def source_hash(*modules: str) -> str:
    """SHA-256 of the source of modules (the installed file, not a copy).

    Read once per process: a run keys thousands of pairs with the same few modules, and every
    key of one run then names the source as it was when the run began.
    """
    digest = hashlib.sha256()
    for name in modules:
        try:  # read without importing: a key never imports a backend (harness.ground.sources)
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
    MISS = "miss"  # no entry under the key (or no cache)
    UNREADABLE = "unreadable"  # an entry that failed to load: judged again, never trusted


class AdmissionCache:
    """A folder of JSON files, one per (check, mutant, sources, versions, reruns) key.

    Safe to share between runs and machines: entries are written atomically, and a key holds
    no absolute path, process id or host name. An entry that fails to load is judged again.
    """

    def __init__(self, root: Path | None = DEFAULT_DIR) -> None:
        self.root = root
        self.counts = {state.value: 0 for state in Lookup}
        # Entries this run loaded or wrote: each is read from disk at most once (an entry's
        # result never changes under its key, so another run's write of it changes nothing).
        self._known: dict[str, MutantResult] = {}

    def lookup(self, key: str) -> tuple[MutantResult | None, Lookup]:
        """The cached result under ``key`` and how the lookup ended (counted in ``counts``)."""
        result, state = self._load(key)
        self.counts[state.value] += 1
        return result, state

    def _load(self, key: str) -> tuple[MutantResult | None, Lookup]:
        if self.root is None:
            return None, Lookup.MISS
        if key in self._known:
            return self._known[key], Lookup.HIT
        path = self.root / f"{key}.json"
        try:
            text = path.read_text()
        except FileNotFoundError:
            return None, Lookup.MISS
        except (OSError, UnicodeDecodeError):
            return None, Lookup.UNREADABLE
        try:
            result = MutantResult.from_json(json.loads(text))
        except (ValueError, KeyError, TypeError, AttributeError):
            return None, Lookup.UNREADABLE
        self._known[key] = result
        return result, Lookup.HIT

    def holds(self, key: str) -> bool:
        """Whether an entry under ``key`` loads (not counted as a lookup)."""
        return self._load(key)[1] is Lookup.HIT

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

    def put(self, key: str, result: MutantResult) -> None:
        """Store ``result`` under ``key``, atomically (nothing when there is no cache)."""
        if self.root is None:
            return
        self.root.mkdir(parents=True, exist_ok=True)
        atomic_write_text(self.root / f"{key}.json", json.dumps(result.to_json(), indent=1))
        self._known[key] = result
