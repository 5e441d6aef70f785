"""The parity gate: reference agent workflows on every backend lane, one replay digest.

Report contract ``kind = "arib/agent-session-parity-v1"`` (see ``harness.parity.gate`` and
``harness/schemas/parity-report.schema.json``). Parts:

- ``workflows``: the reference workflows (offline openai-agents runs with a scripted model);
- ``normalize``: the written table of normalization rules;
- ``lanes``: targets x event loops, plus the in-memory and encrypted lane variants;
- ``runner``: one lane in a forked child; ``compare``: lanes against the reference lane;
- ``generative``: cases composed from the reference pool by seed;
- ``mutants``: the mutants the gate must kill; ``gate``: ``check`` (read-only) and ``update``
  (the producer); ``cli``: ``python -m harness parity {check,update}``.
"""

from __future__ import annotations

KIND = "arib/agent-session-parity-v1"

__all__ = ["KIND"]
