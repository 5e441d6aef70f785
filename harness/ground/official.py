"""What a family's own conformance suite is, run beside our checks (``python -m arib
official``): a family that has one names an ``OfficialSuite`` in its record (``official``).

The harness runs any family's suite the same way: its reference run on each lane the suite
tests, beside the newest bench result of the version, and, with ``--mutants``, the suite as one
more "check" on the same generated mutants as ours. What is the family's own is here: the
suite's distribution, the lanes it tests, how one reference run is made, and the suite in the
shape of a check.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata
from typing import Any


class SuiteStatus(str, enum.Enum):
    """What one run of a suite on one lane came to."""

    PASSED = "passed"  # every test of every detected capability passed
    FAILED = "failed"  # at least one test failed
    ERROR = "error"  # the suite could not run to its end (the saver could not be built, ...)


@dataclass(frozen=True)
class OfficialSuite:
    """A family's own conformance suite, as the harness runs it.

    ``lanes()`` are the lanes it tests (a subset of the family's); ``reference_runs(lanes,
    services, version=, workers=, tmpdir=)`` runs it on each clean lane in forked children and
    gives one run per lane (each with ``lane``, ``status`` a ``SuiteStatus``, ``failing``, the
    keys of its failing tests, ``error`` and ``to_json()``); ``check(baseline, timeout_s)`` is
    the suite in the shape of a check (id ``check_id``), violated when a test fails that passed
    on the lane's clean run; ``code`` the modules whose source keys its cached verdicts;
    ``module`` the module that is importable when the suite is installed.
    """

    name: str  # the suite's distribution
    module: str
    lanes: Callable[[], tuple[Any, ...]]
    reference_runs: Callable[..., tuple[Any, ...]]
    check: Callable[..., Any]
    check_id: str
    code: tuple[str, ...]
    lane_kind: str = "lane"  # what the suite calls the lanes it tests, for messages

    def version(self) -> str:
        """The installed version of the suite, or ``absent``."""
        try:
            return metadata.version(self.name)
        except metadata.PackageNotFoundError:
            return "absent"
