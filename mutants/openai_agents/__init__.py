"""Openai-agents' hand-written mutants, by backend and check area."""
