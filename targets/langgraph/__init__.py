"""The LangGraph family: checkpointers and stores of langgraph-checkpoint, -sqlite, -postgres.

``family.py`` holds the family's record (registered in ``arib.families`` as ``langgraph``),
``reference.py`` our own reference checkpointer, ``lanes.py`` the lanes (one saver or store
class built one way each). A run's version names all three distributions, e.g.
``cp4.3.2+sq3.1.2+pg3.2.0``: they are released apart, and each combination has its own lock.
"""
