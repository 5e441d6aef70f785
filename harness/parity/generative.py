"""Generative parity cases: new workflows composed from the steps of the reference pool.

From a run seed, case ``i`` gets its own case seed (``case_seed(seed, i)``), and the case is a
pure function of that case seed, so one case replays alone with ``--case-seed``. A case is made
by one or more of four operators on the reference workflows: ``shuffle`` (the steps of one
workflow in a random order), ``interleave`` (two workflows' steps alternated), ``repeat`` (a
step or a run of steps done again), ``truncate`` (a prefix). Step ids come from the per-case
counter of ``WorkflowContext``, so a repeated step never reuses an item id. Every case is
executed on every lane and compared with the reference lane like a reference workflow.
"""

from __future__ import annotations

import hashlib
import random
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from arib.checks.parity.kind import CasePool, WorkflowKind
from arib.checks.parity.records import Workflow
from arib.ground.errors import UsageError
from arib.parity.options import DEFAULT_CASES

MAX_STEPS = 9
GENERATIVE_DOMAIN = "generative"
OPERATORS = ("shuffle", "interleave", "repeat", "truncate")


def case_seed(seed: int, index: int) -> int:
    """The seed of case ``index`` of a run with ``seed`` (stable across runs and machines)."""
    raw = hashlib.sha256(f"arib-parity-case\x1f{seed}\x1f{index}".encode()).digest()
    return int.from_bytes(raw[:6], "big")


@dataclass(frozen=True)
class GeneratedCase:
    """One composed workflow, the case seed that rebuilds it, and how it was made."""

    seed: int
    operators: tuple[str, ...]
    sources: tuple[str, ...]
    workflow: Workflow

    def to_json(self) -> dict[str, Any]:
        """The JSON form of this case: seed, name, operators, sources and steps."""
        return {
            "case_seed": self.seed,
            "name": self.workflow.name,
            "operators": list(self.operators),
            "sources": list(self.sources),
            "steps": [s.describe() for s in self.workflow.steps],
        }


def _pick(rng: random.Random, pool: Sequence[Workflow]) -> Workflow:
    return pool[rng.randrange(len(pool))]


def compose(seed: int, cases: CasePool) -> GeneratedCase:
    """The case for ``seed`` drawn from ``cases``: deterministic, at most ``MAX_STEPS`` steps,
    never empty."""
    pool = cases.workflows()
    rng = random.Random(seed)
    first = _pick(rng, pool)
    steps: list[Any] = list(first.steps)
    sources = [first.name]
    operators: list[str] = []
    for _ in range(rng.randint(1, 3)):
        op = OPERATORS[rng.randrange(len(OPERATORS))]
        operators.append(op)
        if op == "shuffle":
            rng.shuffle(steps)
        elif op == "interleave":
            other = _pick(rng, pool)
            sources.append(other.name)
            merged: list[Any] = []
            a, b = list(steps), list(other.steps)
            while a or b:
                if a and (not b or rng.random() < 0.5):
                    merged.append(a.pop(0))
                else:
                    merged.append(b.pop(0))
            steps = merged
        elif op == "repeat":
            start = rng.randrange(len(steps))
            length = rng.randint(1, min(3, len(steps) - start))
            at = rng.randint(start + length, len(steps))
            steps[at:at] = steps[start : start + length]
        elif op == "truncate" and len(steps) > 1:
            steps = steps[: rng.randint(1, len(steps) - 1)]
    steps = steps[:MAX_STEPS]
    if cases.closing_step is not None and rng.random() < 0.5:
        steps.append(cases.closing_step())
    name = f"case-{seed}"
    description = f"{'+'.join(operators)} of {', '.join(sources)}"
    workflow = Workflow(name, GENERATIVE_DOMAIN, description, tuple(steps))
    return GeneratedCase(seed, tuple(operators), tuple(sources), workflow)


def generate(
    kind: WorkflowKind, seed: int, count: int = DEFAULT_CASES, only_case_seed: int | None = None
) -> tuple[GeneratedCase, ...]:
    """``count`` of ``kind``'s cases from ``seed``, or just the case of ``only_case_seed``."""
    if kind.cases is None:
        raise UsageError(
            f"{kind.family} parity workflows have no generated cases (asked for {count!r}); "
            "use --cases 0"
        )
    if only_case_seed is not None:
        return (compose(only_case_seed, kind.cases),)
    return tuple(compose(case_seed(seed, i), kind.cases) for i in range(count))


def replay_command(case: GeneratedCase, lane: str, mutant: str | None = None) -> str:
    """The command that reruns exactly this case on the reference lane and ``lane``."""
    target, _, loop = lane.partition("@")
    words = [
        "python",
        "-m",
        "arib",
        "parity",
        "check",
        "--cases",
        "1",
        "--case-seed",
        str(case.seed),
        "--lanes",
        target,
    ]
    if loop:
        words += ["--loops", loop]
    if mutant:
        words += ["--mutant", mutant]
    return shlex.join(words)
