"""The bench session's steps per version, and where they stop (standard library only: nox's
own Python imports it).

`nox -s bench` runs, for each version in its own environment, the bench and then (for
openai-agents) `parity update`, the producer of results/parity/. Each step's exit code says what
it did (harness/README.md, "nox sessions and their exits"): 0 held, 1 violated, 3 changed
against the accepted baseline and 4 an error finding or nothing measured are outcomes of a step
that ran; they are reported at the end and the session goes on. Any other code is a step that
did not do what was asked: 2, a usage error (it refused its arguments, or an environment whose
installed version is not the one it was built for), or a signal (128 + N, or -N from
subprocess). Then nothing after it runs in the session: not that version's next step, which
would run in the same refused environment (a mislabelled environment's `parity update` rewrote
the results of the version actually installed there), not the next versions, not the
cross-version report.

A run given ``--lanes``, ``--checks`` or ``--shard`` is partial: its results are written and the
session exits by what its steps measured, but the cross-version report, which compares whole
runs only, is not made, and the session says so (``partial_note``) instead of failing in it.
"""

from __future__ import annotations

import signal
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from arib.ground.invocations import family_name

# Exit codes of a step that ran: findings or a failure the closing line reports.
RAN = frozenset({0, 1, 3, 4})
# Of those, the codes that are findings about the versions, not a failure of the session.
FINDINGS = frozenset({0, 1})
# The bench's options that measure part of a version: a partial run, never compared.
PARTIAL_OPTIONS = ("--lanes", "--checks", "--shard")


@dataclass(frozen=True)
class Step:
    """One command of one version: its label in messages ("bench", "parity gate")."""

    label: str
    command: tuple[str, ...]
    env: tuple[tuple[str, str], ...] = ()  # variables set for this command only


@dataclass(frozen=True)
class Outcome:
    """What the steps of every version came to: the steps that failed (exit 3 or 4), and
    the refusal that stopped the session (None when every step ran)."""

    failed: tuple[str, ...]
    refusal: str | None

    def to_json(self) -> dict[str, object]:
        """The outcome as JSON."""
        return {"failed": list(self.failed), "refusal": self.refusal}


def exit_meaning(code: int) -> str:
    """What an exit code that is not an outcome means, in a few words."""
    if code == 2:
        return "a usage error: the step refused its arguments or its environment"
    signum = -code if code < 0 else code - 128 if code > 128 else None
    if signum is not None:
        try:
            return f"stopped by {signal.Signals(signum).name}"
        except ValueError:
            pass
    return "not an exit code of the harness (0, 1, 3 or 4 for a step that ran)"


def run_steps(versions: Sequence[str], steps: Callable[[str], Sequence[Step]],
              run: Callable[[Step], int], family: str | None = None) -> Outcome:
    """Run ``steps(version)`` for each version in turn with ``run`` (which returns the exit
    code); stop at the first step whose code is not an outcome (see the module docstring)."""
    failed: list[str] = []
    for index, version in enumerate(versions):
        for step in steps(version):
            code = run(step)
            if code in FINDINGS:
                continue
            name = version if step.label == "bench" else f"{version} {step.label}"
            if code in RAN:
                failed.append(f"{name} (exit {code})")
                continue
            later = [*versions[index + 1:]]
            skipped = (f"the later steps of {version}"
                       + (f", the versions {', '.join(later)}" if later else "")
                       + " and the cross-version report")
            return Outcome(tuple(failed), (
                f"the {step.label} of {family_name(family)} {version} exited {code} "
                f"({exit_meaning(code)}): nothing after it ran in this session ({skipped} "
                f"were not run), so no other version's results were touched; fix the cause "
                f"it printed above and run the session again"))
    return Outcome(tuple(failed), None)


def partial_selection(args: Sequence[str]) -> str | None:
    """The options among the bench's ``args`` that make its run partial (``--checks X``),
    in words; None for a whole run."""
    found: list[str] = []
    it = iter(args)
    for arg in it:
        name, eq, value = arg.partition("=")
        if name in PARTIAL_OPTIONS:
            found.append(f"{name} {value if eq else next(it, '')}".strip())
    return ", ".join(found) or None


def partial_note(selection: str, family: str | None = None) -> str:
    """What the bench session says instead of comparing a partial run across versions."""
    return (f"partial run ({selection}): only those cells of {family_name(family)} were "
            f"measured and written, and the session exits by what they measured; the "
            f"cross-version report compares whole runs only, so it was not made (a run "
            f"without --lanes, --checks or --shard makes it)")
