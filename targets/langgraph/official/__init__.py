"""The official conformance suite (``langgraph-checkpoint-conformance``) beside our checks.

A subpackage, so that neither the check registry (it is no check of ours) nor the verdict
cache keys of our checks (``harness.keys.family_sources`` hashes the modules of
``targets/langgraph/``, not its subpackages) depend on it: ``suite`` runs the suite on a lane,
``check`` is the suite shaped as a check for the survey, ``side`` the side-by-side table,
``mutants`` the comparison on the same mutants, ``command`` the ``official`` command.
"""
