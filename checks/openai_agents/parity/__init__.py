"""openai-agents' parity workflows: offline agent runs with a scripted model, and every fault a
check injects as a workflow (``kind.AGENT_KIND`` is what the family record names)."""
