"""LangGraph's parity workflows: graph runs on every checkpointer lane (``kind.GRAPH_KIND`` is
what the family record names)."""
