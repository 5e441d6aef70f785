"""A family's own conformance suite beside our checks (LangGraph's, issue 14, point 5).

``suite``: the active family's ``OfficialSuite`` (its record's ``official``; what one is:
``arib.ground.official``); ``side``: the side-by-side table of the suite's reference run and our
bench findings; ``mutants``: both suites on the same generated mutants (one survey);
``command``: ``python -m arib official``. The suite itself runs in the family's own code
(LangGraph's in ``targets/langgraph/official/`` and ``checks/langgraph/_official.py``).
"""
