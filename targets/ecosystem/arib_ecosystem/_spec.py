"""A lane record that fits the installed bench: what a package from outside has to do.

``TargetSpec`` gains fields over time (``distribution``: the package a lane measures;
``traits``: what a family asks of a lane besides its claims). A lane table written for the
newest bench passes them; on a bench that predates a field, ``lane`` leaves it out, and the bench
then does what it does for a lane that never said it (no distribution: an absent package shows
as a module that cannot be imported; no traits: a family that needs them refuses the lane,
naming what is missing).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from arib.targets.base import TargetSpec


def lane(**fields: Any) -> TargetSpec:
    """``TargetSpec(**fields)`` without the fields this bench's TargetSpec does not have."""
    known = {field.name for field in dataclasses.fields(TargetSpec)}
    return TargetSpec(**{name: value for name, value in fields.items() if name in known})
