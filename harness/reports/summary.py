"""The bench's job summary under GitHub Actions: a few lines of Markdown in $GITHUB_STEP_SUMMARY.

Outside GitHub Actions (the variable unset) nothing is written. A summary that cannot be
written is said on stderr and changes nothing else: the run's results are already written.
The regression gate's lines show the judgement the bench made (``BenchOutcome.gate``); the
baseline is not read again.
"""

from __future__ import annotations

import os
import sys
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from arib.ground.model import ExitCode
from arib.runs.compare import GateResult, passed
from arib.runs.coverage import coverage_of

VERDICTS = ("held", "violated", "not_applicable", "error")
MEANING = {ExitCode.OK: "every cell held or does not apply",
           ExitCode.VIOLATED: "violations measured: findings about the SDK",
           ExitCode.REGRESSION: "cells changed against the accepted baseline",
           ExitCode.ERROR_OR_NOTHING: "an error finding, or nothing measured"}
SHOWN = 10  # changed cells listed in the summary; the rest are in the job's log


def _gate_lines(document: Mapping[str, Any], result: GateResult | None,
                accepted: str | None) -> list[str]:
    """The regression gate's outcome in one line, and the cells that fail it (a few)."""
    sdk = document["sdk"]["version"]
    if accepted is not None:
        return [f"- regression gate: not run; this run was accepted as the baseline "
                f"({accepted})"]
    if result is None:
        return [f"- regression gate: not run; no accepted baseline for {sdk} yet "
                f"(`python -m arib accept --sdk {sdk}`)"]
    failing = [c for c in result.changes if c.gates]
    not_compared = sum(map(len, result.not_compared.values()))
    skipped = f"; {not_compared} cell(s) not measured, so not compared" if not_compared else ""
    if not failing:
        return [f"- regression gate: **passed**, {passed(result, sdk)} ({result.compared} "
                f"cell(s) compared){skipped}"]
    lines = [f"- regression gate: **failed**, {len(failing)} of {result.compared} cell(s) "
             f"differ from the accepted baseline of {sdk}{skipped}:"]
    lines += [f"  - {c.kind.value}: {c.describe()}" for c in failing[:SHOWN]]
    if len(failing) > SHOWN:
        lines.append(f"  - ... and {len(failing) - SHOWN} more, listed in the job's log")
    return lines


def job_summary(document: Mapping[str, Any], files: tuple[Path, ...], code: int,
                gate: GateResult | None, accepted: str | None = None) -> str:
    """The summary of one bench run: verdict tally, the regression gate's judgement ``gate``
    (None: no accepted baseline), exit code, files."""
    tally = Counter(f["verdict"] for f in document["findings"])
    coverage = coverage_of(document)
    lines = [f"### Integrity bench: {document['sdk']['name']} {document['sdk']['version']}", "",
             "| " + " | ".join(VERDICTS) + " |", "|---" * len(VERDICTS) + "|",
             "| " + " | ".join(str(tally.get(v, 0)) for v in VERDICTS) + " |", ""]
    if coverage.partial:
        lines.append("- **partial run**: " + "; ".join(coverage.partial_reasons()))
    missing = [n["name"] for n in document.get("not_measured", [])]
    if missing:
        lines.append("- lanes not measured: " + ", ".join(f"`{n}`" for n in missing)
                     + " (why: in the report)")
    lines += _gate_lines(document, gate, accepted)
    meaning = MEANING.get(ExitCode(code), "") if code in set(ExitCode) else ""
    lines.append(f"- exit code {code}" + (f": {meaning}" if meaning else ""))
    lines.append("- written: " + ", ".join(f"`{p}`" for p in files))
    return "\n".join(lines) + "\n"


def append_job_summary(document: Mapping[str, Any], files: tuple[Path, ...], code: int,
                       gate: GateResult | None, accepted: str | None = None,
                       environ: Mapping[str, str] | None = None) -> int:
    """Append the run's summary to $GITHUB_STEP_SUMMARY when it is set; returns ``code``."""
    target = (os.environ if environ is None else environ).get("GITHUB_STEP_SUMMARY")
    if not target:
        return code
    try:
        with open(target, "a", encoding="utf-8") as handle:
            handle.write(job_summary(document, files, code, gate, accepted) + "\n")
    except OSError as exc:
        print(f"job summary not written to GITHUB_STEP_SUMMARY={target!r}: {exc}; the run's "
              f"results are written as listed above", file=sys.stderr)
    return code
