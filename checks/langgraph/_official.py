"""The official conformance suite in the shape of a check, for the mutation runner only.

Not one of our checks (a helper module, ``_official``, so the check registry never loads it,
and it is never admitted or benched): it lets the survey judge the same generated mutants with the
official suite as the "check". One trial runs the whole suite on the lane (``suite.run_suite``);
it is violated when a test fails that passed on the clean saver of that lane (``baseline``: the
clean run's failing tests, per lane), so a test that already fails on the clean saver kills
nothing.
"""

from __future__ import annotations

from collections.abc import Mapping

from arib.checks.base import CheckSpec, TrialContext
from arib.checks.common import trials_param
from arib.ground.family import active_family
from arib.ground.model import Counts, Trial
from arib.ground.official import OfficialSuite, SuiteStatus
from arib.targets.base import TargetSpec
from arib.targets.langgraph.official.suite import SUITE, reference_runs, run_suite

OFFICIAL_ID = "OFFICIAL-CONFORMANCE"


def official_check(baseline: Mapping[str, frozenset[str]], timeout_s: float = 60.0
                   ) -> CheckSpec:
    """The suite as a check; ``baseline`` maps each lane to the tests failing on its clean
    saver (a lane missing from it is refused at run time: its clean run was never made)."""

    async def run_trial(ctx: TrialContext) -> Trial:
        lane = ctx.target.name
        if lane not in baseline:
            raise LookupError(f"no clean run of the official suite on lane {lane!r}: make "
                              f"the reference run of that lane before judging its mutants")
        ctx.log(f"{SUITE} validate() on {lane}, one fresh saver per capability")
        known = baseline[lane]
        run = await run_suite(ctx.target, ctx.build.root / "official", ctx.build.services,
                              active_family().version(),
                              stop_at=lambda t: not t.passed and t.key not in known)
        if run.status is SuiteStatus.ERROR:
            # As for our checks, a suite that cannot run judges nothing: an error finding.
            raise RuntimeError(f"the official suite did not run to its end: {run.error}")
        new = sorted(run.failing - known)
        ctx.log(f"{run.passed} passed, {run.failed} failed, {len(new)} newly failing"
                + (f"; stopped at {run.stopped_at}" if run.stopped_at else ""))
        sample = "; ".join(f"{t.key}: {t.error}" for t in run.tests
                           if t.key in new[:2])[:400] or None
        # a newly failing test is counted as a wrong result: the suite's report does not
        # tell a failed assertion from an exception of the saver
        return Trial(ctx.index, ctx.seed, bool(new), Counts(wrong_result=len(new)),
                     mode="official_failed" if new else "official_passed", sample=sample,
                     ops=tuple(ctx.ops))

    return CheckSpec(
        id=OFFICIAL_ID,
        invariant=f"every test of {SUITE} that passes on the clean saver passes",
        fault="none: the official suite's single-caller tests",
        params=(trials_param(1),),
        run_trial=run_trial,
        mutants=(),
        timeout_s=timeout_s,
        module=__name__,
    )


def _checkpointer_lanes() -> tuple[TargetSpec, ...]:
    """The family's checkpointer lanes, then the installed packages' (plugin lanes whose kind
    is checkpointer: a third-party saver is tested by the suite like the family's own)."""
    from arib.targets.langgraph.lanes import checkpointer_lanes

    return checkpointer_lanes()


# What the family record names (``official``): the suite the harness's `official` command runs.
OFFICIAL_SUITE = OfficialSuite(
    name=SUITE,
    module="langgraph.checkpoint.conformance",
    lanes=_checkpointer_lanes,
    reference_runs=reference_runs,
    check=official_check,
    check_id=OFFICIAL_ID,
    code=("arib.targets.langgraph.official.suite", __name__),
    lane_kind="checkpointer lane",
)
