"""The report of ``validate()``: one Finding per check, and a text a person reads quickly."""

from __future__ import annotations

import textwrap
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from arib.api.capability import Found
from arib.ground.model import ExitCode, Finding, Verdict, exit_code

_ORDER = {Verdict.ERROR: 0, Verdict.VIOLATED: 1, Verdict.HELD: 2, Verdict.NOT_APPLICABLE: 3}
_WIDTH = 96


def _clip(text: str, width: int = _WIDTH) -> str:
    line = " ".join(text.split())
    return line if len(line) <= width else line[: width - 3] + "..."


def _field(label: str, text: str, limit: int = 400) -> list[str]:
    """``  label: text`` wrapped under its label, cut at ``limit`` characters."""
    return textwrap.wrap(_clip(text, limit), _WIDTH, initial_indent=f"  {label:<10} ",
                         subsequent_indent=" " * 13)


def _counts(finding: Finding) -> str:
    parts = [f"{name} {value}" for name, value in finding.counts.to_json().items() if value]
    return ", ".join(parts)


@dataclass(frozen=True)
class Report:
    """What ``validate()`` found: one Finding per check, run on one user factory."""

    factory: str  # module.qualname of the user's factory
    lane: str  # the lane name the trial seeds derive from
    seed: int
    findings: tuple[Finding, ...]
    duration_s: float
    # check id -> the Python call that reruns its first violating trial alone
    replays: Mapping[str, str] = field(default_factory=dict)
    # check id -> why it was not run (a need the object does not meet, or not a default)
    skipped: Mapping[str, str] = field(default_factory=dict)
    # what the probe found on the object (empty when it could not look)
    capabilities: tuple[Found, ...] = ()

    @property
    def passed(self) -> bool:
        """True when no check was violated or errored and at least one held."""
        return exit_code(self.findings) is ExitCode.OK

    @property
    def failed(self) -> tuple[Finding, ...]:
        """The findings that were violated or errored, errors first."""
        bad = [f for f in self.findings if f.verdict in (Verdict.ERROR, Verdict.VIOLATED)]
        return tuple(sorted(bad, key=lambda f: (_ORDER[f.verdict], f.invariant_id)))

    def __getitem__(self, check_id: str) -> Finding:
        for finding in self.findings:
            if finding.invariant_id == check_id:
                return finding
        raise KeyError(f"{check_id!r} is not in this report; it has "
                       f"{', '.join(f.invariant_id for f in self.findings) or 'no finding'}")

    def __iter__(self) -> Iterator[Finding]:
        return iter(self.findings)

    def __repr__(self) -> str:
        return f"<Report {self.factory}: {self.headline()}>"

    def headline(self) -> str:
        """E.g. ``FAILED: 1 violated, 4 held of 5 checks (seed 0, 3.1 s)``."""
        tally: dict[str, int] = {}
        for finding in self.findings:
            tally[finding.verdict.value] = tally.get(finding.verdict.value, 0) + 1
        parts = [f"{tally[v.value]} {v.value}" for v in _ORDER if v.value in tally]
        state = "passed" if self.passed else "FAILED"
        n = len(self.findings)
        return (f"{state}: {', '.join(parts) or 'nothing measured'} of {n} "
                f"check{'' if n == 1 else 's'} (seed {self.seed}, {self.duration_s:.1f} s)")

    def __str__(self) -> str:
        lines = [f"arib validate {self.factory}: {self.headline()}"]
        for finding in self.failed:
            lines += ["", *self._explain(finding)]
        rest = [f for f in self.findings if f not in self.failed]
        if rest:
            lines.append("")
        for finding in sorted(rest, key=lambda f: (_ORDER[f.verdict], f.invariant_id)):
            line = f"  {finding.verdict.value:<14} {finding.invariant_id}"
            if finding.verdict is Verdict.HELD:
                line += f"  {finding.trials} trials"
            elif finding.reason:
                line += "  " + _clip(finding.reason, 70)
            lines.append(line)
        lines += self._not_run()
        return "\n".join(lines)

    def _not_run(self) -> list[str]:
        """The checks not run, those with one reason on one line: ``  not run  IDS: why``."""
        by_reason: dict[str, list[str]] = {}
        for check_id, reason in self.skipped.items():
            by_reason.setdefault(reason, []).append(check_id)
        lines = [""] if by_reason else []
        for reason, ids in by_reason.items():
            lines += textwrap.wrap(f"{', '.join(sorted(ids))}: {reason}", _WIDTH,
                                   initial_indent=f"  {'not run':<14} ",
                                   subsequent_indent=" " * 17, break_on_hyphens=False)
        return lines

    def _explain(self, finding: Finding) -> list[str]:
        head = f"{finding.verdict.value.upper()} {finding.invariant_id}"
        if finding.verdict is Verdict.VIOLATED:
            head += f": {finding.violating_trials} of {finding.trials} trials violated"
            counts = _counts(finding)
            head += f"; {counts}" if counts else ""
        lines = [head, *_field("invariant:", finding.invariant)]
        if finding.reason:
            lines += _field("reason:", finding.reason)
        if finding.traceback:
            lines += _field("raised:", finding.traceback.strip().splitlines()[-1])
        if finding.samples:
            lines += _field("sample:", finding.samples[0])
        replay = self.replays.get(finding.invariant_id)
        if replay:
            lines.append(f"  replay:    {replay}")
        return lines

    def to_json(self) -> dict[str, Any]:
        """The JSON form of this report."""
        return {
            "factory": self.factory,
            "lane": self.lane,
            "seed": self.seed,
            "passed": self.passed,
            "duration_s": round(self.duration_s, 4),
            "findings": [f.to_json() for f in self.findings],
            "replays": dict(self.replays),
            "skipped": dict(self.skipped),
            "capabilities": [c.to_json() for c in self.capabilities],
        }
