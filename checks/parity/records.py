"""The records every kind of parity workflow shares: reads, their digests, workflows, results.

Light on purpose (no SDK import): the gate's comparison and report are built from these alone,
so a family whose runtime is not openai-agents (the LangGraph graph runs of
``arib.parity.graphs``) reports through the same contract.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

DISPLAY_STRING_LIMIT = 160


def canonical_json(value: Any) -> str:
    """The canonical JSON text every digest is computed over."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def digest(value: Any) -> str:
    """SHA-256 (hex) of the canonical JSON of ``value``."""
    return hashlib.sha256(canonical_json(value).encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Read:
    """What the session returned at one read: a label saying where, and the items."""

    label: str
    items: list[Any]

    def payload(self) -> list[Any]:
        """The label and items, the value the read's digest is computed over."""
        return [self.label, self.items]

    def digest(self) -> str:
        """The digest of this read's label and items."""
        return digest(self.payload())


def display(value: Any) -> Any:
    """A readable form of read items: long strings shortened to their length and digest."""
    if isinstance(value, str) and len(value) > DISPLAY_STRING_LIMIT:
        sha = hashlib.sha256(value.encode("utf-8")).hexdigest()[:16]
        return f"{value[:48]}…<{len(value)} chars, sha256 {sha}>"
    if isinstance(value, list):
        return [display(v) for v in value]
    if isinstance(value, dict):
        return {k: display(v) for k, v in value.items()}
    return value



@dataclass(frozen=True)
class Workflow:
    """A named, deterministic sequence of steps in one domain."""

    name: str
    domain: str
    description: str
    steps: tuple[Any, ...]  # steps of its kind: each has describe(), kind and run()

    def to_json(self) -> dict[str, Any]:
        """The JSON form of this workflow: name, domain, description and steps."""
        return {
            "name": self.name,
            "domain": self.domain,
            "description": self.description,
            "steps": [s.describe() for s in self.steps],
        }



def workflow_domains(workflows: Sequence[Workflow]) -> tuple[str, ...]:
    """The sorted distinct domains of ``workflows``."""
    return tuple(sorted({w.domain for w in workflows}))


@dataclass(frozen=True)
class WorkflowResult:
    """One workflow on one lane: ok, digests, per-read digests, and the reads (display form)."""

    name: str
    domain: str
    ok: bool
    replay_hash: str
    replay_hash_normalized: str | None
    read_labels: tuple[str, ...]
    read_hashes: tuple[str, ...]
    rules_applied: tuple[str, ...] = ()
    error: str | None = None
    elapsed_ms: float = 0.0
    reads: tuple[Read, ...] | None = None
    case_seed: int | None = None
    # Why the lane's runtime never offered what this workflow needs (verified on the object);
    # an abstaining lane is listed by the gate, not compared.
    abstained: str | None = None

    @property
    def parity_hash(self) -> str:
        """The hash compared across lanes: normalized when a rule applied, else raw."""
        return self.replay_hash_normalized or self.replay_hash

    def without_reads(self) -> WorkflowResult:
        """This result without its reads."""
        return replace(self, reads=None)

    def to_json(self, *, with_reads: bool = False) -> dict[str, Any]:
        """The JSON form of this result (its reads in display form when asked)."""
        data: dict[str, Any] = {
            "name": self.name,
            "domain": self.domain,
            "ok": self.ok,
            "replay_hash": self.replay_hash,
            "replay_hash_normalized": self.replay_hash_normalized,
            "parity_hash": self.parity_hash,
            "read_labels": list(self.read_labels),
            "read_hashes": list(self.read_hashes),
            "rules_applied": list(self.rules_applied),
            "error": self.error,
            "elapsed_ms": round(self.elapsed_ms, 3),
            "case_seed": self.case_seed,
            "abstained": self.abstained,
        }
        if with_reads and self.reads is not None:
            data["reads"] = [[r.label, display(r.items)] for r in self.reads]
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> WorkflowResult:
        """The workflow result from its JSON form."""
        return cls(
            name=data["name"],
            domain=data["domain"],
            ok=bool(data["ok"]),
            replay_hash=data["replay_hash"],
            replay_hash_normalized=data.get("replay_hash_normalized"),
            read_labels=tuple(data.get("read_labels", ())),
            read_hashes=tuple(data.get("read_hashes", ())),
            rules_applied=tuple(data.get("rules_applied", ())),
            error=data.get("error"),
            elapsed_ms=float(data.get("elapsed_ms", 0.0)),
            case_seed=data.get("case_seed"),
            abstained=data.get("abstained"),
        )


async def play_steps(workflow: Any, ctx: Any, lane: str,
                     raised: Callable[[BaseException], Any]) -> tuple[str | None, str | None]:
    """Run ``workflow``'s steps on ``ctx`` in order (either kind of workflow): (error,
    abstention). A step raising ``faultkit.Abstain`` ends it as not applicable on this lane;
    any other exception ends it, recorded as ``raised(exc)`` and kept as the evidence."""
    from arib.checks.parity.faultkit import Abstain

    for index, step in enumerate(workflow.steps):
        ctx.step_label = f"{index:02d}.{step.kind}"
        try:
            await step.run(ctx)
        except Abstain as exc:
            ctx.record("abstained", [{"reason": str(exc)}])
            return None, str(exc)
        except Exception as exc:  # noqa: BLE001 - a raising backend is evidence, kept in reads
            ctx.record("raised", raised(exc))
            return raised_error(ctx.step_label, workflow.name, lane, exc), None
    return None, None


def raised_error(step_label: str, workflow: str, lane: str, exc: BaseException) -> str:
    """The evidence of a step that raised: where, what, and the traceback."""
    import traceback

    return (
        f"step {step_label!r} of workflow {workflow!r} raised on lane {lane!r}: "
        f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=8)}"
    )


def result_from_reads(
    workflow: Workflow,
    reads: tuple[Read, ...],
    normalized: tuple[Read, ...],
    rules: tuple[str, ...],
    *,
    error: str | None,
    elapsed_ms: float,
    case_seed: int | None = None,
    abstained: str | None = None,
) -> WorkflowResult:
    """A workflow's result from its raw reads and their normalized form: ``replay_hash`` over
    the raw reads, and, when a rule rewrote something (``rules``), the normalized digests."""
    return WorkflowResult(
        name=workflow.name,
        domain=workflow.domain,
        ok=error is None,
        replay_hash=digest([r.payload() for r in reads]),
        replay_hash_normalized=(digest([r.payload() for r in normalized]) if rules else None),
        read_labels=tuple(r.label for r in reads),
        read_hashes=tuple(
            (n.digest() if rules else r.digest()) for r, n in zip(reads, normalized, strict=True)
        ),
        rules_applied=rules,
        error=error,
        elapsed_ms=elapsed_ms,
        reads=tuple(normalized) if rules else reads,
        case_seed=case_seed,
        abstained=abstained,
    )
