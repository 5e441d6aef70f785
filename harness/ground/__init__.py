"""The ground floor: what checks/, mutants/ and targets/ may import from the harness.

The shared result and key types (``model``), the one exception hierarchy (``errors``), the
forked runner (``child``, with ``interrupts``, ``scratch`` and ``owners``) and the services
the lanes need (``services``, with ``binaries``). Nothing here imports checks/, mutants/,
targets/ or any other part of harness/ (tests/test_layering.py enforces it).
"""
