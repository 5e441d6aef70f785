"""The toy family's hand-written mutants."""
