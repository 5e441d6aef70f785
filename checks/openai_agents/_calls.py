"""Calls a working session must serve, judged as problems (ARIB-RELEASE-001, ARIB-TABLES-001).

A check whose fault is about one thing (files released, a misconfiguration refused) still has
to set up its store with plain calls. When a plain call fails, the session is broken in a way
the check's invariant covers too (it cannot give back what it was given), so the failure is a
problem of the trial, not a harness error; the trial stops there.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import anyio

from arib.checks.base import NotApplicable, TrialContext, describe
from arib.checks.openai_agents._problems import Problems
from arib.ground.model import Trial

CALL_TIMEOUT_S = 10.0


class Stop(Exception):
    """The trial cannot go on: a plain call failed (already recorded as a problem)."""


class ProblemLog(Problems):
    """The problems a trial found, in order, and the plain calls it needs served."""

    async def must(self, what: str, call: Callable[[], Awaitable[Any]],
                   mode: str = "call_failed") -> Any:
        """``call()``, which a working session serves within ``CALL_TIMEOUT_S``; else a
        problem ``mode``, and ``Stop``."""
        try:
            with anyio.fail_after(CALL_TIMEOUT_S):
                return await call()
        except NotApplicable:
            raise  # an abstention is not a failed call
        except Exception as exc:  # noqa: BLE001 - a session that cannot serve a plain call
            self.add(mode, f"{what} raised {describe(exc)}")
            self.raised += 1
            raise Stop from exc

    def judged(self, ctx: TrialContext, held_mode: str) -> Trial:
        """The trial: violated by any problem, each counted once: a plain call that raised
        as ``raised``, any other as ``wrong_result``."""
        self.wrong_result = len(self.problems) - self.raised
        return self.trial(ctx, held_mode)
