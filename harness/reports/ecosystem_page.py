"""The Markdown page of the ecosystem table (arib.reports.ecosystem): lanes, the table of checks
by lanes, one section per finding written to be sent to the package's maintainers, the
violations no direct reproduction confirmed, and what was not measured."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from arib.reports.ecosystem import Column, Ecosystem, Finding

OPS_SHOWN = 40  # operations of a finding's trial shown in order; the JSON keeps them all


def _lane_line(column: Column) -> str:
    package = (f"{column.distribution} {column.distribution_version or '(version not recorded)'}"
               if column.third_party else "the family's own")
    return (f"| `{column.lane}` | {package} | {column.version} | {column.run} | "
            f"{column.not_measured or ''} |")


def _survey_cell(survey: Mapping[str, Any] | None) -> str:
    if survey is None:
        return "not run"
    if survey.get("error"):
        return f"error: {survey['error']}"
    covered = survey.get("score_covered")
    score = "n/a" if covered is None else f"{covered:.1%}"
    return (f"{score} of covered ({survey.get('mutants', 0)} mutants of "
            f"`{survey.get('module')}`: killed {survey.get('killed', 0)}, survived "
            f"{survey.get('survived', 0)}, no_coverage {survey.get('no_coverage', 0)})")


def _official_cell(official: Mapping[str, Any] | None) -> str:
    if official is None:
        return "not run"
    failing = list(official.get("failing") or [])
    shown = ", ".join(f"`{t}`" for t in failing[:3]) + (
        f" and {len(failing) - 3} more" if len(failing) > 3 else "")
    return (f"{official.get('status')}: {official.get('passed')} passed, "
            f"{official.get('failed')} failed" + (f" ({shown})" if failing else "")
            + (f"; {official['error']}" if official.get("error") else ""))


def _parity_cell(parity: Mapping[str, Any] | None) -> str:
    if parity is None:
        return "not run"
    reasons = list(parity.get("reasons") or [])
    workflows = sorted({r.split("'")[1] for r in reasons if r.startswith("workflow '")})
    return (f"{parity.get('verdict')} against `{parity.get('reference')}` "
            f"({parity.get('workflows')} workflows)"
            + (f": differs in {', '.join(f'`{w}`' for w in workflows)}" if workflows else ""))


def _measured_otherwise(third: list[Column]) -> list[str]:
    """The survey of each third-party lane's module, the parity gate and the family's
    official suite on it."""
    if not any(c.survey is not None or c.official is not None or c.parity is not None
               for c in third):
        return []
    return ["", "## The survey, the parity gate and the official suite on the third-party "
                "lanes", "",
            "What our checks see of each package's own code (the survey of its module's "
            "generated mutants, the score of the covered ones killed), the reference workflows "
            "replayed on the lane against the family's reference (the parity gate), and the "
            "family's own conformance suite run on the same lane:", "",
            "| lane | survey | parity gate | official suite |", "|---|---|---|---|",
            *[f"| `{c.lane}` | {_survey_cell(c.survey)} | {_parity_cell(c.parity)} | "
              f"{_official_cell(c.official)} |" for c in third]]


def _reruns_text(found: Finding) -> str:
    """How the cell did when benched again under other run seeds ("" when it was not)."""
    if not found.reruns:
        return ""
    runs = [found.violating > 0, *(v > 0 for v, _ in found.reruns)]
    trials = found.trials + sum(t for _, t in found.reruns)
    violating = found.violating + sum(v for v, _ in found.reruns)
    every = "every run" if all(runs) else f"{sum(runs)} of {len(runs)} runs"
    return (f" Benched again under {len(found.reruns)} other run seed(s), the clean lane "
            f"violates it in {every}: {violating} of {trials} trials, a rate of "
            f"{violating / trials:.2f} per trial." if trials else "")


def _own_too(found: Finding) -> str:
    """What the family's own lanes say of the same check at the same version, when they
    violate it too."""
    if not found.own_too:
        return ""
    names = ", ".join(f"`{lane}`" for lane in found.own_too)
    return (f"{names} violate{'s' if len(found.own_too) == 1 else ''} it too on "
            f"{found.version} (its accepted baseline)")


def _finding(number: int, found: Finding) -> list[str]:
    rate = f"{found.violating} of {found.trials} trials"
    lines = [f"### {number}. {found.distribution} {found.distribution_version or ''}: "
             f"{found.check} violated on `{found.lane}`".replace("  ", " "),
             "",
             f"**What should hold.** {found.invariant}.",
             "",
             f"**What the check did.** {found.fault}.",
             "",
             f"**What happened.** In the bench ({found.version}), {rate} violated it."
             + _reruns_text(found)]
    if found.own_too:
        lines += ["", f"**The family's own lanes.** {_own_too(found)}: weigh this finding "
                      f"against them."]
    if found.samples:
        lines += ["", "Evidence:", ""] + [f"- {s}" for s in found.samples]
    if found.ops:
        shown = found.ops[:OPS_SHOWN]
        lines += ["", "The operations of the violating trial, in order:", "", "```text",
                  *shown, *([f"... {len(found.ops) - len(shown)} more in the JSON"]
                            if len(found.ops) > len(shown) else []), "```"]
    if found.replay:
        lines += ["", "Replay this trial in the lane's environment:", "", "```sh",
                  found.replay, "```"]
    confirmation = found.confirmation
    assert confirmation is not None
    lines += ["", f"**Reproduced without the harness** by `{confirmation.script}` (exit "
                  f"{confirmation.exit_code}), its output:", "", "```text",
              confirmation.output.rstrip(), "```", ""]
    return lines


def render(eco: Ecosystem) -> str:
    """The page's Markdown text."""
    from arib.reports.ecosystem import CellState

    third = [c for c in eco.columns if c.third_party]
    lines = [f"# Ecosystem: {eco.family}, third-party backends beside the family's own",
             "",
             f"Generated by `python -m arib --family {eco.family} ecosystem report` from "
             f"{len(eco.runs)} bench result file(s); do not edit by hand. A cell is the "
             f"verdict and its violating trials of trials; `n/a` is a check that does not "
             f"apply to the lane (its reason is in the JSON).",
             "",
             "| lane | package | family version | run | not measured |",
             "|---|---|---|---|---|",
             *[_lane_line(c) for c in eco.columns],
             ""]
    # The table shows the checks some third-party lane was measured on, and the family's own
    # lanes measured on one of them (a store lane beside checkpointers only); the JSON has all.
    judged = (CellState.HELD, CellState.VIOLATED, CellState.ERROR)
    rows = [check for check in eco.invariants
            if any(eco.cell(check, c.lane).state in judged for c in third)]
    shown = [c for c in eco.columns if c.third_party or any(
        eco.cell(check, c.lane).state in judged for check in rows)]
    lines += ["| check | " + " | ".join(f"`{c.lane}`" for c in shown) + " |",
              "|---|" + "---|" * len(shown)]
    for check in rows:
        lines.append(f"| {check} | " + " | ".join(
            eco.cell(check, c.lane).label() for c in shown) + " |")
    left = [check for check in eco.invariants if check not in rows]
    hidden = [c.lane for c in eco.columns if c not in shown]
    if left or hidden:
        lines += ["", "Not in the table (in the JSON): "
                  + "; ".join(part for part in (
                      f"checks no third-party lane was judged on: {', '.join(left)}"
                      if left else "",
                      f"the family's lanes judged on none of the checks above: "
                      f"{', '.join(hidden)}" if hidden else "") if part) + "."]
    lines += _measured_otherwise(third)
    reported = [f for f in eco.findings if f.reported]
    unconfirmed = [f for f in eco.findings if not f.reported]
    lines += ["", f"## Findings ({len(reported)})", ""]
    if not reported:
        lines += ["No violation on a third-party lane was reproduced without the harness."
                  if eco.findings else
                  f"No check was violated on the {len(third)} third-party lane(s).", ""]
    for number, found in enumerate(reported, 1):
        lines += _finding(number, found)
    if unconfirmed:
        lines += [f"## Violations not confirmed ({len(unconfirmed)})", "",
                  "Not reported as findings: no direct reproduction (a script using the "
                  "package without the harness) reproduced them yet.", ""]
        for found in unconfirmed:
            why = ("no reproduction script" if found.confirmation is None else
                   f"`{found.confirmation.script}` exited {found.confirmation.exit_code}")
            again = "".join(f", {v}/{t}" for v, t in found.reruns)
            lines.append(f"- {found.check} on `{found.lane}`: violated {found.violating}/"
                         f"{found.trials}{again}" + (" (bench, then reruns)" if again else "")
                         + f"; {why}"
                         + (f"; the family's own {_own_too(found)}" if found.own_too else ""))
        lines.append("")
    errors = [(k, c) for k, c in eco.cells.items() if c.state is CellState.ERROR]
    if errors:
        lines += ["## Errors", ""] + [f"- {check} on `{lane}`: {c.reason or 'see the JSON'}"
                                      for (check, lane), c in errors] + [""]
    return "\n".join(lines).rstrip() + "\n"
