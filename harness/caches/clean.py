"""Clean bases kept across runs and SDK versions: a check's clean reruns on a lane, reused
when everything they executed is unchanged.

Before a survey judges a lane's mutants it runs every check on the clean lane, three times,
with the line recorder (``arib.survey.coverage``): whether the check may judge there, its time, the
lines it reaches and what it executed in installed distributions. On the next run, or the next
SDK version, most of that is the same. An entry is keyed like a verdict (``clean_key``: the
check's source, the lane's configuration and module, the seed, reruns and time rule) but not
on the installed code, which only the runs themselves find; the entry names what they executed
(``arib.caches.inputs.named_inputs``), and a lookup reuses it only when every one of those
functions, module bodies and distribution versions is the same in this installation
(``inputs_unchanged``), as ccache's direct mode checks the headers a compile read before it
reuses the object. Otherwise the check runs clean again, and its new runs are kept.

Only clean bases where every rerun held are kept. One that was violated, timed out or raised
runs again each time, and marks its key unstable: a check that once failed on the clean lane
under the same key (a race it loses now and then) is never reused, so that one lucky run does
not make it judgeable for good; every survey measures it again, as before there was a cache.
One that abstained runs again too (it decides from the lane's claims, verified before the
recorder starts, and a new version may add the method it looked for; it costs milliseconds).

Limit, the one the verdict keys have (``arib.caches.inputs``): a lookup checks the code the stored
runs executed. Code they did not execute, that the unchanged code would now reach through
something only import-time code set (a module no executed function belongs to), is not seen.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from arib.caches.inputs import Installation, inputs_unchanged
from arib.caches.verdicts import Lookup
from arib.ground.files import atomic_write_text
from arib.ground.model import CleanBase, Verdict
from arib.survey.coverage import from_ranges, to_ranges


@dataclass(frozen=True)
class CleanEntry:
    """One check's clean reruns on one lane: the base, the lane module's lines they ran and
    the named inputs of what they executed."""

    base: CleanBase
    lines: frozenset[int]
    inputs: Mapping[str, Any]

    def to_json(self) -> dict[str, Any]:
        """The JSON form of this entry."""
        return {"base": self.base.to_json(), "lines": to_ranges(self.lines),
                "inputs": dict(self.inputs)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> CleanEntry:
        """An entry from its JSON form."""
        inputs = data["inputs"]
        if not isinstance(inputs, dict):
            raise TypeError(f"inputs must be a JSON object, not {inputs!r:.80}")
        return cls(CleanBase.from_json(data["base"]), from_ranges(data["lines"]), inputs)


def keepable(base: CleanBase) -> bool:
    """Whether clean runs may be kept: every rerun ran and held."""
    return bool(base.verdicts) and not base.cached and all(
        v is Verdict.HELD for v in base.verdicts)


class Reuse(enum.Enum):
    """How a lookup of clean runs ended."""

    REUSED = "reused"
    MISSING = "missing"  # no entry under the key (or no cache)
    UNREADABLE = "unreadable"  # an entry that failed to load: run again, never trusted
    CHANGED = "changed"  # an entry whose executed code differs in this installation
    UNSTABLE = "unstable"  # clean runs under this key once did not all hold: never reused


class CleanCache:
    """Clean entries in the ``clean`` folder of a verdict cache's root (no root: no cache)."""

    def __init__(self, root: Path | None, where: Installation | None = None) -> None:
        self.root = None if root is None else root / "clean"
        self.where = where

    def lookup(self, key: str, check_id: str, lane: str) -> tuple[CleanEntry | None, Reuse]:
        """The entry under ``key`` for ``check_id`` on ``lane``, as kept, when it loads and
        names this installation's code (else None), and how the lookup ended. An entry for
        another cell, or one that could not have been kept, is unreadable. The caller marks
        the base reused where it stands it in for a run (as for gates and bases)."""
        if self.root is not None and (self.root / f"{key}.unstable").exists():
            return None, Reuse.UNSTABLE
        entry, state = self._load(key)
        if entry is not None and not (entry.base.check_id == check_id
                                      and entry.base.lane == lane and keepable(entry.base)):
            entry, state = None, Lookup.UNREADABLE
        if entry is None:
            return None, Reuse.UNREADABLE if state is Lookup.UNREADABLE else Reuse.MISSING
        if not inputs_unchanged(entry.inputs, self.where):
            return None, Reuse.CHANGED
        return entry, Reuse.REUSED

    def _load(self, key: str) -> tuple[CleanEntry | None, Lookup]:
        if self.root is None:
            return None, Lookup.MISS
        try:
            text = (self.root / f"{key}.json").read_text()
        except FileNotFoundError:
            return None, Lookup.MISS
        except (OSError, UnicodeDecodeError):
            return None, Lookup.UNREADABLE
        try:
            return CleanEntry.from_json(json.loads(text)), Lookup.HIT
        except (ValueError, KeyError, TypeError, AttributeError):
            return None, Lookup.UNREADABLE

    def settle(self, key: str, base: CleanBase, entry: CleanEntry | None) -> None:
        """After fresh clean runs under ``key``: keep ``entry`` (their base, lines and named
        inputs; None when the inputs cannot be named) when every rerun held and the key was
        never unstable; mark the key unstable when a rerun neither held nor abstained. Files
        are written atomically."""
        if self.root is None or not base.verdicts or base.cached or base.abstains:
            return
        self.root.mkdir(parents=True, exist_ok=True)
        unstable = self.root / f"{key}.unstable"
        if not keepable(base):
            atomic_write_text(unstable, json.dumps(base.to_json(), indent=1))
            (self.root / f"{key}.json").unlink(missing_ok=True)
        elif entry is not None and not unstable.exists():
            atomic_write_text(self.root / f"{key}.json", json.dumps(entry.to_json(), indent=1))
