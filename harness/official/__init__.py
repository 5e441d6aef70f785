"""The LangGraph family's official conformance suite beside our checks (issue 14, point 5).

``side``: the side-by-side table of the suite's reference run and our bench findings;
``mutants``: both suites on the same generated mutants (one survey); ``command``: ``python -m
harness --family langgraph official``. The suite itself runs in
``targets/langgraph/official/`` (the family's own code).
"""
