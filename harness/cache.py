"""Admission cache: a mutant's status under a check, keyed by everything that could change it."""

from __future__ import annotations

import functools
import hashlib
import importlib
import inspect
import json
import os
from pathlib import Path
from typing import Any

from harness.ground.model import MutantResult
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
        try:
            digest.update(inspect.getsource(importlib.import_module(name)).encode())
        except (ImportError, OSError, TypeError) as exc:
            digest.update(f"<{name}: {exc!r}>".encode())
    return digest.hexdigest()


def cache_key(**parts: Any) -> str:
    """A stable key from named parts."""
    text = json.dumps(parts, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


class AdmissionCache:
    """A folder of JSON files, one per (check, mutant, sources, versions, reruns) key."""

    def __init__(self, root: Path | None = DEFAULT_DIR) -> None:
        self.root = root

    def get(self, key: str) -> MutantResult | None:
        """The cached result under ``key``, or None (no cache, no entry, or unreadable)."""
        if self.root is None:
            return None
        path = self.root / f"{key}.json"
        try:
            return MutantResult.from_json(json.loads(path.read_text()))
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def put(self, key: str, result: MutantResult) -> None:
        """Store ``result`` under ``key``, atomically (nothing when there is no cache)."""
        if self.root is None:
            return
        self.root.mkdir(parents=True, exist_ok=True)
        atomic_write_text(self.root / f"{key}.json", json.dumps(result.to_json(), indent=1))
