"""The side-by-side table: per lane and version, what the official suite reports (its reference
run) and what our checks report (the newest bench result of the same version)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from arib.ground.official import OfficialSuite, SuiteStatus
from arib.official.suite import active_suite


@dataclass(frozen=True)
class OurSide:
    """What our checks report on one lane in one bench result file."""

    lane: str
    source: str | None  # the bench result file, None when there is none
    verdicts: Mapping[str, str]  # check id -> verdict
    note: str | None = None  # why there is nothing to show (no file, lane not benched, ...)

    @property
    def violated(self) -> tuple[str, ...]:
        """The checks violated on this lane, sorted."""
        return tuple(sorted(c for c, v in self.verdicts.items() if v == "violated"))

    def summary(self) -> str:
        """One cell of the table: counts per verdict and the checks violated."""
        if not self.verdicts:
            return self.note or "no finding"
        counts = Counter(self.verdicts.values())
        text = ", ".join(f"{n} {v}" for v, n in sorted(counts.items()))
        return text + (f" ({', '.join(self.violated)})" if self.violated else "")

    def to_json(self) -> dict[str, Any]:
        """The JSON form of our side of one lane."""
        return {"lane": self.lane, "source": self.source, "verdicts": dict(self.verdicts),
                "violated": list(self.violated), "note": self.note}


@dataclass(frozen=True)
class SideBySide:
    """Every lane's official reference run beside our findings, for one version."""

    family: str  # the family's name
    suite: OfficialSuite  # the family's official suite (arib.official.suite.active_suite)
    version: str
    suite_version: str
    official: tuple[Any, ...]  # the suite's runs, one per lane (OfficialSuite.reference_runs)
    ours: tuple[OurSide, ...]
    not_measured: Mapping[str, str]  # lane -> why neither side could run there

    def to_json(self) -> dict[str, Any]:
        """The JSON form of the table."""
        return {"kind": "arib-official-side-by-side", "version": self.version,
                "suite": self.suite.name,
                "suite_version": self.suite_version,
                "lanes": [{"lane": run.lane, "official": run.to_json(), "ours": our.to_json()}
                          for run, our in zip(self.official, self.ours, strict=True)],
                "not_measured": dict(self.not_measured)}

    def markdown(self) -> str:
        """The table in Markdown, then the failing official tests with their messages."""
        lines = [f"# {self.suite.name} {self.suite_version} beside our checks, {self.family} "
                 f"{self.version}",
                 "", "Official: the suite's own `validate` (single caller, async API) on savers "
                 "built by the lane's builder, one fresh store per capability. Ours: the "
                 "newest bench result of this version.", "",
                 "| lane | called as | official: level | passed | failed | skipped "
                 "capabilities | official failing tests | ours |",
                 "|---|---|---|---|---|---|---|---|"]
        for run, our in zip(self.official, self.ours, strict=True):
            failing = ", ".join(sorted(run.failing)) or "-"
            if run.status is SuiteStatus.ERROR:
                failing = f"error: {run.error}"
            skipped = ", ".join(c.capability for c in run.capabilities if not c.detected)
            lines.append(f"| {run.lane} | {run.bridge.value} | {run.conformance_level or '-'} "
                         f"| {run.passed} | {run.failed} | {skipped or '-'} | {failing} | "
                         f"{our.summary()} |")
        for lane, why in sorted(self.not_measured.items()):
            lines.append(f"| {lane} | - | not measured | - | - | - | {why} | - |")
        for run in self.official:
            bad = [t for t in run.tests if not t.passed]
            if bad:
                lines += ["", f"## {run.lane}: failing official tests", ""]
                lines += [f"- `{t.key}`: {t.error}" for t in bad]
        return "\n".join(lines) + "\n"


def newest_bench(folder: Path, version: str) -> Path | None:
    """The newest bench result file of ``version`` in ``folder`` (names sort by start time)."""
    from arib.runs.results import run_glob

    found = sorted(folder.glob(run_glob(version)))
    return found[-1] if found else None


def our_sides(lanes: Sequence[str], folder: Path, version: str, reference: str = ""
              ) -> tuple[OurSide, ...]:
    """Our findings per lane from the newest bench result of ``version`` in ``folder``
    (``reference``: the name of the reference lane, which the bench does not run)."""
    from arib.runs.results import read_results

    path = newest_bench(folder, version)
    if path is None:
        why = (f"no bench result of {version} in {str(folder)!r}: run `python -m arib "
               f"--family {active_suite()[0].name} bench --out {folder}`")
        return tuple(OurSide(lane, None, {}, why) for lane in lanes)
    document = read_results(path)
    absent = {m["name"]: m["reason"] for m in document.get("not_measured", [])}
    sides = []
    for lane in lanes:
        verdicts = {f["invariant_id"]: f["verdict"] for f in document["findings"]
                    if f["target"] == lane}
        note = absent.get(lane) or (
            None if verdicts else "the reference lane: judged by admission, not benched"
            if lane == reference else "no finding on this lane in that bench run")
        sides.append(OurSide(lane, str(path), verdicts, note))
    return tuple(sides)
