"""Retained lane reports: where the producer keeps them, and when one may be reused.

A retained report is reused (``--reuse``) only when its binding (lane identity, SDK version,
harness commit, lock hash, Python version, workflow definitions, seed and cases) equals this
run's and it was ok; anything else is named, never silently run around.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from arib.parity.runner import LANE_KIND, LaneReport


def parity_dir(results_dir: Path, sdk: str) -> Path:
    """The folder of the parity results of ``sdk`` under ``results_dir``."""
    return results_dir / "parity" / sdk


def lane_report_path(base: Path, lane: str) -> Path:
    """Where the retained report of ``lane`` lives under ``base``."""
    return base / "lanes" / f"{lane}.json"


@dataclass(frozen=True)
class Retained:
    """The outcome of looking for a reusable retained lane report."""

    report: LaneReport | None = None
    note: str | None = None
    failure: str | None = None


def load_retained(path: Path, binding: Mapping[str, Any]) -> Retained:
    """A reusable report at ``path`` for ``binding``, or why there is none."""
    if not path.exists():
        return Retained(note=f"no retained report at {str(path)!r}; ran fresh")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        return Retained(failure=f"retained lane report {str(path)!r} is corrupt: {exc}")
    if not isinstance(data, dict) or data.get("kind") != LANE_KIND:
        kind = data.get("kind") if isinstance(data, dict) else type(data).__name__
        return Retained(
            failure=f"retained lane report {str(path)!r} is foreign (kind {kind!r}, expected "
            f"{LANE_KIND!r})"
        )
    try:
        report = LaneReport.from_json(data)
    except (KeyError, TypeError, ValueError) as exc:
        return Retained(failure=f"retained lane report {str(path)!r} is corrupt: {exc!r}")
    for key in sorted(set(binding) | set(report.binding)):
        have, want = report.binding.get(key), binding.get(key)
        if have != want:
            return Retained(
                failure=f"retained lane report {str(path)!r} is bound to {key} {have!r}, this "
                f"run has {want!r}; refresh it with `python -m arib parity update`"
            )
    if not report.ok:
        return Retained(note=f"retained report {str(path)!r} was not ok; ran fresh")
    return Retained(report=report.as_reused())
