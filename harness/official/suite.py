"""The active family's official suite (its record's ``official``), or a usage error."""

from __future__ import annotations

import importlib.util

from arib.ground.errors import UsageError
from arib.ground.family import Family, active_family, all_families
from arib.ground.official import OfficialSuite


def active_suite(installed: bool = False) -> tuple[Family, OfficialSuite]:
    """The active family and its official suite; UsageError when the family has none, or,
    with ``installed``, when the suite is not importable here."""
    family = active_family()
    if not family.official:
        having = [f.name for f in all_families() if f.official]
        raise UsageError(
            f"`official` runs a family's own conformance suite beside our checks, and family "
            f"{family.name!r} has none (families with one: {', '.join(having) or 'none'}); "
            f"run `python -m arib --family {having[0] if having else '<family>'} official`")
    suite = family.resolve_as("official", OfficialSuite)
    if installed and not _importable(suite.module):
        raise UsageError(f"{suite.name} is not installed in this environment; install the "
                         f"family's lock file (in {family.lock_dir or 'its lock folder'}), which "
                         f"pins it, then rerun")
    return family, suite


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:  # a parent package is missing
        return False
