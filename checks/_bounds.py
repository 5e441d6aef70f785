"""How long a check waits for calls that must return before it calls them hung.

A check whose invariant includes "every call returns" reports a call that never returned as a
finding of its own (mode ``hung``), not as the harness's timeout of the whole run: a hang is
evidence about the backend, a timeout says only that the run was cut. So the check's wait must
end before the harness's limit for the run (``TrialContext.deadline``: the check's own timeout
in a clean run, a multiple of the clean run for a mutant), and be long against a working call
(milliseconds for every backend here): at most ``HANG_CAP_S``, at most ``HANG_SHARE`` of the
time the run has left, never below ``HANG_FLOOR_S``.
"""

from __future__ import annotations

import time

from arib.checks.base import TrialContext

HANG_CAP_S = 5.0
HANG_SHARE = 0.5
HANG_FLOOR_S = 0.5


def hang_bound(ctx: TrialContext, cap_s: float = HANG_CAP_S) -> float:
    """Seconds to wait for calls that must return: ``cap_s``, or ``HANG_SHARE`` of what is
    left until the run's deadline when that is less, never below ``HANG_FLOOR_S``."""
    if ctx.deadline is None:
        return cap_s
    left = ctx.deadline - time.monotonic()
    return max(HANG_FLOOR_S, min(cap_s, HANG_SHARE * left))
