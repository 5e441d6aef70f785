"""Cache keys and every store."""
