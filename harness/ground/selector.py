"""Selector: how a check names the generated mutants it must kill.

It sits on the ground floor so that checks/ (which pairs with mutants through it) and
mutants/ (which resolves it against a lane's generated pool) share it without either
importing the other.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Selector:
    """Names generated mutants a check must kill: backend lane, qualified name, operator."""

    target: str
    qualname: str = "*"
    operator: str = "*"

    def to_json(self) -> dict[str, str]:
        """The JSON form of this selector."""
        return {"target": self.target, "qualname": self.qualname, "operator": self.operator}
