"""The parity gate: reference agent workflows on every backend lane, one replay digest.

Report contract ``kind = "arib/agent-session-parity-v1"`` (see ``arib.parity.report`` and
``harness/schemas/parity-report.schema.json``). Parts:

- ``records``: what every kind of workflow shares (reads, digests, ``Workflow``,
  ``WorkflowResult``), importable without the SDK; ``options.WorkflowKind``: what a family
  changes (lanes, how a lane plays a workflow, rules, reference lane), ``AGENT_KIND`` the
  sessions' own;
- ``graph_gate``, ``graph_steps``, ``graph_records``: the LangGraph kind (graph runs on every
  checkpointer lane, their steps, their plain JSON and written normalization rules);
- ``steps``: the steps workflows are made of, and the context they run in;
- ``workflows``: the reference workflows (offline openai-agents runs with a scripted model);
- ``fault_workflows``: every fault a check injects, as a workflow (steps in ``faults`` and
  ``races``, shared tools and outcome classes in ``faultkit``);
- ``normalize``: the written table of normalization rules;
- ``lanes``: targets x event loops, plus the in-memory and encrypted lane variants;
- ``runner``: lanes in forked children; ``compare``: lanes against the reference lane;
- ``generative``: cases composed from the reference pool by seed;
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
