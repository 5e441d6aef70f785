"""The official conformance suite (``langgraph-checkpoint-conformance``) on the family's lanes.

``suite`` runs the suite on a lane (its reference run), ``check`` shapes it as a check for the
mutation runner. A subpackage, so that neither the check registry (it is no check of ours)
nor the verdict cache keys of our checks (``arib.caches.keys.family_sources`` hashes the modules
of ``targets/langgraph/``, not its subpackages) depend on it. The comparison with our checks
and the ``official`` command are harness code: ``harness/official/``.
"""
