"""The mutation survey."""
