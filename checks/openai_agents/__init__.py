"""Openai-agents' checks: one module per invariant, and their helpers."""
