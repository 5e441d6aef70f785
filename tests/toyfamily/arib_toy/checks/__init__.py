"""The toy family's checks."""
