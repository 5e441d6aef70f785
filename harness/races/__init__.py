"""The races corpus and its measurement."""
