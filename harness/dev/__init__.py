"""Tools of the project's own development (left out of the wheel)."""
