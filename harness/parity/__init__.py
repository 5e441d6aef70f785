"""The parity gate: a family's reference workflows on every lane, one replay digest.

Report contract ``kind = "arib/agent-session-parity-v1"`` (see ``arib.parity.report`` and
``harness/schemas/parity-report.schema.json``). This package is the gate alone, the same for
every family; what a family changes is its ``WorkflowKind`` (``arib.checks.parity.kind``), named
by its record's ``parity`` field and defined with its workflows, steps, faults and rules in
``checks/<family>/parity/``. Parts:

- ``options``: ``GateOptions`` and the active family's kind; ``lanes``: a kind's targets under
  event loops, and the selection (reference lane first);
- ``runner``: lanes in forked children; ``compare``: lanes against the reference lane;
- ``generative``: cases composed by seed from the pool the kind gives;
- the mutants the gate must kill are the family's (``arib.mutants.registry.parity_mutants``;
  ``arib.mutants.parity``: what one is);
- ``history``: the p95 history; ``retained``: reusable lane reports;
- ``gate``: the gate's steps, ``check`` (read-only) and ``update`` (the producer); ``plan``:
  lane bindings, reuse and start order; ``judge``: each criterion as fail reasons;
  ``report``: ``GateReport`` (facts and outcome), fail reasons and verdicts; ``cli``:
  ``python -m arib parity {check,update}``.
"""

from __future__ import annotations

KIND = "arib/agent-session-parity-v1"

__all__ = ["KIND"]
