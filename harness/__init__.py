"""The agent integrity bench: ``arib.validate(factory)`` judges a session store of your own with
the bench's invariant checks; ``python -m arib`` (or ``arib``) runs the bench, the survey and
the parity gate. The names below are loaded on first use, so ``import arib`` imports neither
family's SDK."""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from arib.api import DEFAULT_CHECKS, Lane, Report, as_lane, avalidate, lane, validate

__all__ = ["DEFAULT_CHECKS", "Lane", "Report", "__version__", "as_lane", "avalidate", "lane",
           "validate"]
_API = frozenset(__all__) - {"__version__"}


def __getattr__(name: str) -> Any:
    if name in _API:
        return getattr(import_module("arib.api"), name)
    if name == "__version__":
        from arib.ground.package import version

        return version()
    raise AttributeError(f"module 'arib' has no attribute {name!r}")
