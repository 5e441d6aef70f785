"""What any family's parity workflows are made of (the gate itself is ``arib.parity``).

- ``records``: reads, digests, ``Workflow`` and ``WorkflowResult``, importable without an SDK;
- ``kind``: ``WorkflowKind``, all a family changes in the gate (its lanes, how a lane plays a
  workflow, its written rules, its reference lane, the pool generated cases draw from);
- ``normalize``: what a written normalization rule is and how rules rewrite reads;
- ``faultkit``: the tools fault workflows share (outcome classes, interrupted calls, the store
  a step reaches beside the lane's session).

A family's own workflows, steps, faults and rules live in its folder:
``checks/<family>/parity/``, whose ``kind`` module holds the family's ``WorkflowKind`` (named by
the family record's ``parity`` field).
"""
