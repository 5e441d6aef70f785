"""The parity gate's history: one JSON line per fresh run that held, and its p95.

``history.jsonl`` beside the gate report is appended to only by the producer (``parity update``);
any corrupt or foreign line makes the whole file untrustworthy, which the gate names as a failed
step rather than guessing around it.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HISTORY_KIND = "arib/agent-session-parity-history-v1"
HISTORY_WINDOW = 100


@dataclass(frozen=True)
class HistoryEntry:
    """One sample of the gate's elapsed time, from a fresh run that held."""

    at: str
    elapsed_ms: float
    sdk: str
    harness_commit: str
    lock_hash: str
    lanes: tuple[str, ...]
    cases: int
    # Lanes run at once; entries written before lanes could run together were sequential.
    workers: int = 1

    def to_json(self) -> dict[str, Any]:
        """The JSON form of this history entry."""
        return {
            "kind": HISTORY_KIND,
            "at": self.at,
            "elapsed_ms": round(self.elapsed_ms, 3),
            "sdk": self.sdk,
            "harness_commit": self.harness_commit,
            "lock_hash": self.lock_hash,
            "lanes": list(self.lanes),
            "cases": self.cases,
            "workers": self.workers,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> HistoryEntry:
        """The entry from its JSON form (``workers`` defaults to 1)."""
        return cls(
            at=str(data["at"]),
            elapsed_ms=float(data["elapsed_ms"]),
            sdk=str(data["sdk"]),
            harness_commit=str(data["harness_commit"]),
            lock_hash=str(data["lock_hash"]),
            lanes=tuple(str(x) for x in data["lanes"]),
            cases=int(data["cases"]),
            workers=int(data.get("workers", 1)),
        )


@dataclass(frozen=True)
class HistoryRead:
    """The valid entries of a history file, or the problem that makes it untrustworthy."""

    entries: tuple[HistoryEntry, ...]
    problem: str | None = None


def read_history(path: Path) -> HistoryRead:
    """Parse ``history.jsonl``; any corrupt or foreign line makes the whole file a problem."""
    if not path.exists():
        return HistoryRead(())
    entries: list[HistoryEntry] = []
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        return HistoryRead((), f"history file {str(path)!r} cannot be read: {exc}")
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except ValueError as exc:
            return HistoryRead(
                (),
                f"history file {str(path)!r} line {number} is corrupt (not JSON: {exc}); "
                "repair or remove it, then run `python -m arib parity update`",
            )
        if not isinstance(data, dict) or data.get("kind") != HISTORY_KIND:
            kind = data.get("kind") if isinstance(data, dict) else type(data).__name__
            return HistoryRead(
                (),
                f"history file {str(path)!r} line {number} is foreign (kind {kind!r}, "
                f"expected {HISTORY_KIND!r}); it was not written by the parity producer",
            )
        try:
            entries.append(HistoryEntry.from_json(data))
        except (KeyError, TypeError, ValueError) as exc:
            return HistoryRead(
                (), f"history file {str(path)!r} line {number} is corrupt (bad field: {exc!r})"
            )
    return HistoryRead(tuple(entries))


def p95(samples: Sequence[float]) -> float | None:
    """Nearest-rank 95th percentile, or None without samples."""
    if not samples:
        return None
    ordered = sorted(samples)
    return ordered[max(0, math.ceil(0.95 * len(ordered)) - 1)]


def append_history(path: Path, entry: HistoryEntry) -> None:
    """Append one JSON line (the producer is the only caller)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    line = (json.dumps(entry.to_json(), sort_keys=True, ensure_ascii=False) + "\n").encode()
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line)
        os.fsync(fd)
    finally:
        os.close(fd)
