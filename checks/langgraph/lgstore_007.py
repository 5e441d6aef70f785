"""ARIB-LGSTORE-007 (issue 35): a store opened with ``from_conn_string`` and set up once keeps the
concurrent writes of several workers; leaving the context releases the connection (calls then
refuse); the async stores' own context stops their TTL sweeper; a fresh instance reads every
write. See ``arib.checks.langgraph._lifecycle``.
"""

from __future__ import annotations

from arib.checks.base import CheckSpec, Param, Selector, TrialContext
from arib.checks.common import trials_param
from arib.checks.langgraph._lifecycle import lifecycle
from arib.ground.model import Trial

CHECK_ID = "ARIB-LGSTORE-007"


async def run_trial(ctx: TrialContext) -> Trial:
    """One trial: open by string, set up once, concurrent writes, leave, probe, read back."""
    return await lifecycle(ctx, racing_setup=False)


CHECK = CheckSpec(
    id=CHECK_ID,
    invariant="a store opened with from_conn_string keeps the concurrent writes of several "
    "workers; leaving the context releases the connection "
    "(calls then refuse) and the async stores' own context stops their TTL sweeper",
    fault="put/get released together from several threads or tasks on a store opened by its "
    "connection string; the context left; a call after it",
    params=(Param("workers", 4, 2, 16, "threads or tasks writing"), trials_param(3)),
    run_trial=run_trial,
    mutants=("lg_store_reference_context_leaves_open", "lg_async_sqlite_store_exit_keeps_sweeper"),
    generated=(Selector("lg-store-async-sqlite-file", "AsyncSqliteStore.__aexit__", "*"),
               Selector("lg-store-async-sqlite-file", "AsyncSqliteStore.__aenter__", "*")),
    timeout_s=30.0,
    reference="lg-store-reference",
)
