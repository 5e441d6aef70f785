"""What ``python -m arib run`` prints: the run's outcome in words, with its evidence.

One rule for a run that ends at its time limit, as in admission and the survey
(``arib.judging.run_status``): a timeout is a violation only for a check whose invariant says
that the call does not hang (``CheckSpec.hang_invariant``); for any other check it is its own
outcome, ``timeout``, never a kill and never a pass. ``run --json -`` prints the same outcome
as JSON (``run_json``).
"""

from __future__ import annotations

import dataclasses
import textwrap
from collections.abc import Sequence
from typing import Any

from arib.ground.model import Finding, MutantStatus, Verdict

_WIDTH = 96
_SAMPLES = 3


def timeout_rule(check: Any) -> str:
    """The sentence that says what a timeout of ``check`` is."""
    if check.hang_invariant:
        return (f"a timeout is a violation for {check.id}: its invariant says the call does not "
                f"hang (hang_invariant)")
    return (f"a timeout is not a kill for {check.id}: its invariant does not say the call does "
            f"not hang, so a run past its time limit is the outcome 'timeout'")


def judged(check: Any, finding: Finding) -> Finding:
    """``finding`` as the timeout rule reads it: a timed-out run of a "does not hang" check is
    violated (its evidence kept), any other finding as it is."""
    if not (finding.timed_out and check.hang_invariant):
        return finding
    return dataclasses.replace(finding, verdict=Verdict.VIOLATED,
                               violating_trials=max(1, finding.violating_trials))


def outcome_word(check: Any, finding: Finding) -> str:
    """``held``, ``violated``, ``timeout``, ``error`` or ``not_applicable`` for one run."""
    if finding.timed_out and not check.hang_invariant:
        return "timeout"
    return judged(check, finding).verdict.value


def _wrap(label: str, text: str, limit: int = 600) -> list[str]:
    line = " ".join(str(text).split())
    line = line if len(line) <= limit else line[: limit - 3] + "..."
    return textwrap.wrap(line, _WIDTH, initial_indent=f"  {label:<11}",
                         subsequent_indent=" " * 13) or [f"  {label}"]


def _counts(finding: Finding) -> str:
    return ", ".join(f"{k} {v}" for k, v in finding.counts.to_json().items() if v) or "none"


def _evidence(check: Any, finding: Finding) -> list[str]:
    """Every line of evidence one run has: trials, counts, reason, what was raised, samples,
    modes, seeds and the replay command."""
    word = outcome_word(check, finding)
    head = f"{word.upper()} {finding.invariant_id} on {finding.target}: "
    head += ("ran past its time limit" if finding.timed_out and not finding.trials
             else f"{finding.violating_trials} of {finding.trials} trials violated")
    lines = [head + f" ({finding.duration_s:.1f} s)",
             *_wrap("invariant:", finding.invariant), *_wrap("fault:", finding.fault),
             *_wrap("counts:", _counts(finding))]
    if finding.timed_out:
        lines += _wrap("timed out:", timeout_rule(check))
    if finding.reason:
        lines += _wrap("reason:", finding.reason)
    if finding.traceback:
        label = "child:" if finding.timed_out else "raised:"
        lines += _wrap(label, finding.traceback.strip().splitlines()[-1])
    for n, sample in enumerate(finding.samples[:_SAMPLES]):
        lines += _wrap("sample:" if n == 0 else "", sample, 300)
    if len(finding.samples) > _SAMPLES:
        lines.append(f"{'':13}(+{len(finding.samples) - _SAMPLES} more samples in --json -)")
    if finding.modes:
        lines += _wrap("modes:", ", ".join(f"{k} {v}" for k, v in finding.modes.items()))
    if finding.seeds:
        shown = ", ".join(map(str, finding.seeds[:4]))
        more = f" (+{len(finding.seeds) - 4} more)" if len(finding.seeds) > 4 else ""
        lines += _wrap("seeds:", shown + more)
    if not (finding.reason or finding.samples or finding.traceback or finding.timed_out):
        lines += _wrap("evidence:", f"{finding.trials} trials judged, no sample recorded")
    if finding.replay:
        lines.append(f"  {'replay:':<11}{finding.replay}")
    return lines


def render_run(check: Any, findings: Sequence[Finding], mutant: Any = None,
               status: MutantStatus | None = None) -> str:
    """The text ``run`` prints: the mutant's status under the check when one was installed,
    then the evidence of every run."""
    lines: list[str] = []
    if mutant is not None and status is not None:
        words = [outcome_word(check, f) for f in findings]
        lines.append(f"mutant {mutant.id} ({mutant.kind.value}) under {check.id}: "
                     f"{status.value.upper()} ({', '.join(words)} in {len(findings)} "
                     f"run{'' if len(findings) == 1 else 's'}; killed means "
                     f"{mutant.expected.value} in every run)")
        lines += _wrap("defect:", mutant.description)
        lines += _wrap("where:", f"{mutant.module}.{mutant.qualname}")
        if any(f.timed_out for f in findings):
            lines += _wrap("rule:", timeout_rule(check))
        lines.append("")
    for n, finding in enumerate(findings):
        if n:
            lines.append("")
        lines += _evidence(check, finding)
    return "\n".join(lines)


def run_json(check: Any, findings: Sequence[Finding], mutant: Any = None,
             status: MutantStatus | None = None) -> dict[str, Any]:
    """The JSON ``run --json`` writes: the first run's finding, its outcome under the timeout
    rule, and (with ``--mutant``) the mutant's status under the check."""
    doc = findings[0].to_json() | {"outcome": outcome_word(check, findings[0])}
    if mutant is not None and status is not None:
        doc["mutant"] = {"id": mutant.id, "name": mutant.name, "status": status.value,
                         "expected": mutant.expected.value,
                         "runs": [outcome_word(check, f) for f in findings]}
    return doc
