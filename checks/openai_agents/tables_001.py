"""ARIB-TABLES-001: a session configured for tables its store does not hold is refused, and the
refusal changes nothing.

Agent code opens AdvancedSQLiteSession without ``create_tables`` (the constructor's default is
False) in every worker but one, and deployments share one database file between services that
name their tables differently. A session that accepts a store holding other tables reads and
writes rows that belong to another table pair; one that is refused with a driver error (a raw
``sqlite3.OperationalError``) instead of the documented ``ValueError`` escapes the caller's
handling of a misconfiguration; one whose refusal writes its own claim locks the rightful
owners out. Invariant, on a store claimed by the lane's default table pair and holding a
history:

- an instance configured for another messages table, another sessions table, a messages
  table that is the store's sessions table (these without table creation) or another pair
  (with table creation) is refused with ValueError, at
  construction or at its first call, and after each refusal the store is as it was: the
  first instance reads the whole history, still appends, and a fresh default instance reads
  the same;
- an instance of the store's own pair without table creation is served (it reads the
  history);
- on a new store, an instance without table creation is refused with ValueError; once an
  instance with table creation has written to it, an instance without table creation reads
  that item.

The order of the four misconfigurations is seeded.
"""

from __future__ import annotations

from typing import Any

import anyio

from arib.checks.base import CheckSpec, NotApplicable, ParityFault, Selector, TrialContext, describe
from arib.checks.common import canonical, read_items, trials_param
from arib.checks.openai_agents._calls import CALL_TIMEOUT_S, ProblemLog, Stop
from arib.ground.model import Trial

CHECK_ID = "ARIB-TABLES-001"

MISCONFIGURED: tuple[tuple[str, dict[str, Any]], ...] = (
    ("another messages table, without table creation",
     {"create_tables": False, "messages_table": "arib_other_messages"}),
    ("another sessions table, without table creation",
     {"create_tables": False, "sessions_table": "arib_other_sessions"}),
    ("a messages table that is the store's sessions table, without table creation",
     {"create_tables": False, "messages_table": "agent_sessions"}),
    ("another table pair, with table creation",
     {"create_tables": True, "sessions_table": "arib_other_sessions",
      "messages_table": "arib_other_messages"}),
)


def _keys(items: list[Any]) -> list[str]:
    return [canonical(i) for i in items]


async def _refused(ctx: TrialContext, log: ProblemLog, what: str, options: dict[str, Any],
                   **where: Any) -> None:
    """An instance built with ``options`` must be refused with ValueError (at construction or
    at its first call); a problem otherwise."""
    ctx.log(f"open an instance with {options} ({what}); then get_items()  # must be refused")
    try:
        handle = await (ctx.open_with(options={**ctx.build.options, **options}, **where)
                        if where else ctx.open_configured(**options))
        with anyio.fail_after(CALL_TIMEOUT_S):
            seen = await read_items(handle.session)
    except NotApplicable:
        raise  # the lane takes no such option: the check abstains
    except ValueError:
        return
    except TimeoutError:
        log.add("probe_hung", f"the instance with {what}: its first get_items() did not "
                    f"end in {CALL_TIMEOUT_S:.0f}s")
        return
    except Exception as exc:  # noqa: BLE001 - a refusal of the wrong kind is the evidence
        log.add("wrong_refusal", f"the instance with {what} was refused with "
                    f"{describe(exc)}, not with ValueError")
        return
    log.add("accepted_misconfigured", f"the instance with {what} was served: its first "
                f"get_items() returned {len(seen)} items")


async def _store_intact(ctx: TrialContext, log: ProblemLog, x: Any, history: list[Any],
                        what: str) -> None:
    """After a refusal: X reads ``history`` and appends; a fresh default instance agrees."""
    seen = await log.must("X.get_items()", lambda: read_items(x), mode="refusal_changed_store")
    if _keys(seen) != _keys(history):
        log.add("refusal_changed_store", f"after the refusal of {what}, X read "
                    f"{len(seen)} items, not the {len(history)} stored")
    item = {"role": "user", "content": f"{ctx.seed:x} after refusal {len(history)}"}
    ctx.log("X.add_items([1 item]); a fresh default instance reads")
    await log.must("X.add_items() after a refusal", lambda: x.add_items([item]),
                   mode="refusal_changed_store")
    history.append(item)
    fresh = await log.must("opening a fresh default instance", ctx.open,
                           mode="refusal_changed_store")
    seen = await log.must("the fresh default instance's get_items()",
                          lambda: read_items(fresh.session), mode="refusal_changed_store")
    if _keys(seen) != _keys(history):
        log.add("refusal_changed_store", f"after the refusal of {what}, a fresh default "
                    f"instance read {len(seen)} items, not the {len(history)} stored")


async def _phases(ctx: TrialContext, log: ProblemLog) -> None:
    history = [{"role": "user", "content": f"{ctx.seed:x} item {i}"}
               for i in range(ctx.rng.randint(1, 3))]
    ctx.log(f"X = default instance; X.add_items({len(history)} items)")
    x = (await log.must("opening the default instance X", ctx.open,
                        mode="configured_open_refused")).session
    await log.must("X.add_items()", lambda: x.add_items(list(history)),
                   mode="configured_open_refused")
    order = list(MISCONFIGURED)
    ctx.rng.shuffle(order)
    for what, options in order:
        await _refused(ctx, log, what, options)
        await _store_intact(ctx, log, x, history, what)

    ctx.log("open an instance of the store's own pair without table creation; get_items()")
    own = await log.must("opening the store's own pair without table creation",
                         lambda: ctx.open_configured(create_tables=False),
                         mode="configured_open_refused")
    seen = await log.must("its get_items()", lambda: read_items(own.session),
                          mode="configured_open_refused")
    if _keys(seen) != _keys(history):
        log.add("configured_open_refused", f"the store's own pair without table creation "
                    f"read {len(seen)} items, not the {len(history)} stored")

    new = ctx.build.root / "new-store"
    new.mkdir()
    await _refused(ctx, log, "no table creation on a new store", {"create_tables": False},
                   root=new)
    item = {"role": "user", "content": f"{ctx.seed:x} new store"}
    ctx.log("new store: an instance with table creation appends 1 item; one without reads")
    creator = await log.must("opening the new store with table creation",
                             lambda: ctx.open_with(root=new, options={
                                 **ctx.build.options, "create_tables": True}),
                             mode="configured_open_refused")
    await log.must("its add_items()", lambda: creator.session.add_items([item]),
                   mode="configured_open_refused")
    reader = await log.must("opening the new store without table creation",
                            lambda: ctx.open_with(root=new, options={
                                **ctx.build.options, "create_tables": False}),
                            mode="configured_open_refused")
    seen = await log.must("its get_items()", lambda: read_items(reader.session),
                          mode="configured_open_refused")
    if _keys(seen) != _keys([item]):
        log.add("configured_open_refused", f"on the new store, the instance without "
                    f"table creation read {len(seen)} items, not the 1 written")


async def run_trial(ctx: TrialContext) -> Trial:
    """One trial: sessions set for tables the store lacks must be refused, changing nothing."""
    log = ProblemLog()
    try:
        await _phases(ctx, log)
    except Stop:
        pass
    return log.judged(ctx, "refused")


CHECK = CheckSpec(
    id=CHECK_ID,
    invariant="a session configured for tables its store does not hold (another messages "
    "or sessions table, another pair, or no table creation on a new store) is refused with "
    "ValueError, and the refusal changes nothing: the store's own instances read and append "
    "as before; an instance of the store's own pair without table creation is served",
    fault="instances opened on a claimed store with another messages table, another "
    "sessions table, the sessions table as messages table and another pair (seeded "
    "order), then the store's own pair without table creation; a new store opened "
    "without table creation, then with it",
    params=(trials_param(2),),
    run_trial=run_trial,
    mutants=(
        "reference_tables_claim_ignored",
        "reference_tables_wrong_refusal",
        "reference_tables_refusal_takes_claim",
        "reference_tables_refuses_own_pair",
        "reference_tables_unclaimed_accepted",
    ),
    generated=(
        Selector("advanced-sqlite-file", "AdvancedSQLiteSession._resolve_base_table_owners",
                 "flip_comparison"),
    ),
    parity=(
        ParityFault(
            "fault_misconfigured_tables", "fault:tables",
            "instances configured for tables the store does not hold: refused with "
            "ValueError, the store unchanged",
            "arib.checks.openai_agents.parity.store_faults:MisconfiguredTables",
        ),
    ),
)
