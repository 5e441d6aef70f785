"""Backend lanes: one adapter per backend, plus the reference backend."""
