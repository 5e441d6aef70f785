"""Openai-agents' lanes: the SDK's session backends, our reference, the family record."""
