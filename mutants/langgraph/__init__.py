"""Hand-written mutants of the LangGraph family's savers and of its reference."""
