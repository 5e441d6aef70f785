"""ARIB-BUDGET-001: a read budget bounds a read's work; it never changes what a read returns.

Agent code sets ``EncryptedSession(max_scan_items=N)`` to bound the work of one
``get_items`` call on a long history. What it relies on is in the constructor's docstring
(openai-agents 0.24.0): the budget is "Positive" (``ValueError`` if not), it bounds the items
retrieved per read, and a read "Raises RuntimeError when a complete result cannot be
established within the budget"; with a budget "negative effective retrieval limits raise
ValueError", and zero requests no history. So a budgeted read either returns exactly what an
unbudgeted read returns (the newest ``k`` items, in order) or refuses loudly; it never returns
a wrong or truncated window, never more than N items (it retrieved no more than N), and never
hangs. It must answer when the budget holds the result: a limit ``0 <= k <= N`` of a history
it can read, or a history of fewer than N items. Without a budget reads are the wrapped
store's own: ``get_items(limit=-1)`` returns every item, as in every SDK backend.

A trial, on a fresh store with a seeded plan (N = ``budget``):

1. opening with ``max_scan_items`` 0 and -1 must raise (a lane without the option abstains);
2. a history of fewer than N items, then one of more than or exactly N, written by an
   instance without a budget; after each, an instance with budget N reads with limits 0, 1,
   N - 1, N, N + 1, more than stored, no limit and -1, each read under a deadline
   (``READ_DEADLINE_S``, a thousand times a read of this size);
3. the unbudgeted instance reads with no limit and with -1: every item, in order.
"""

from __future__ import annotations

from typing import Any

import anyio

from arib.checks.base import CheckSpec, NotApplicable, Param, Selector, TrialContext, describe
from arib.checks.common import canonical, read_items, trials_param
from arib.checks.openai_agents._problems import Problem, labels, problems_trial
from arib.ground.model import Counts, Trial

CHECK_ID = "ARIB-BUDGET-001"
# A read of at most a few dozen small items takes milliseconds; one that has not returned
# after this long is looping (a budget loop that cannot end), not slow.
READ_DEADLINE_S = 5.0


def _window(items: list[Any], limit: int | None) -> list[Any]:
    """What an unbudgeted read returns: the newest ``limit`` items (all for None or < 0)."""
    if limit is None or limit < 0:
        return items
    return items[len(items) - min(limit, len(items)):]


async def _bounded_read(session: Any, limit: int | None) -> tuple[str, list[Any] | str]:
    """("ok", items), ("refused", the exception) or ("hung", "")."""
    with anyio.move_on_after(READ_DEADLINE_S):
        try:
            return "ok", await read_items(session, limit)
        except Exception as exc:  # noqa: BLE001 - a refusal is an allowed answer
            return "refused", describe(exc)
    return "hung", ""


async def _judge_reads(ctx: TrialContext, session: Any, items: list[Any], budget: int,
                       problems: list[Problem]) -> None:
    """Step 2's reads of ``items`` through ``session`` (budget N), judged one by one."""
    stored = len(items)
    limits: list[int | None] = list(dict.fromkeys(
        (0, 1, budget - 1, budget, budget + 1, stored + 2)))
    limits += [None, -1]
    ctx.log(f"budget {budget}, {stored} items stored: get_items(limit=k) for k in {limits}")
    for limit in limits:
        status, got = await _bounded_read(session, limit)
        want = _window(items, limit)
        what = f"with {stored} items stored, get_items(limit={limit}) under max_scan_items=" \
               f"{budget}"
        must_answer = (limit is not None and 0 <= limit <= budget) or stored < budget
        if limit is not None and limit < 0:
            must_answer = False  # documented: refused with a budget
        if status == "hung":
            problems.append(("read_hung", f"{what} had not returned after {READ_DEADLINE_S} s"))
        elif status == "refused":
            if must_answer:
                problems.append(("refused_within_budget",
                                 f"{what} raised {got}; the budget holds its result "
                                 f"{labels(want, 3)}"))
            else:
                ctx.log(f"  limit={limit}: refused ({got})")
        elif isinstance(got, list) and len(got) > budget:
            problems.append(("over_budget", f"{what} returned {len(got)} items, more than the "
                                            f"budget lets it retrieve"))
        elif isinstance(got, list) and [canonical(i) for i in got] != [canonical(i)
                                                                       for i in want]:
            problems.append(("wrong_window", f"{what} returned {labels(got)}; expected "
                                             f"{labels(want, 3)}"))


async def run_trial(ctx: TrialContext) -> Trial:
    """One trial: bad budgets refused, then budgeted reads at every limit edge of two histories."""
    budget = ctx.params["budget"]
    ctx.log(f"open with max_scan_items={budget}; open without a budget")
    try:
        bounded = await ctx.open_configured(max_scan_items=budget)
        plain = await ctx.open()
    except NotApplicable:
        raise
    except Exception as exc:  # noqa: BLE001 - a valid budget (or none) refused is evidence
        return Trial(ctx.index, ctx.seed, True, Counts(raised=1), mode="valid_budget_refused",
                     sample=f"opening with max_scan_items={budget} or without a budget raised "
                            f"{describe(exc)}", ops=tuple(ctx.ops))
    problems: list[Problem] = []
    for bad in (0, -1):
        ctx.log(f"open with max_scan_items={bad}")
        try:
            await ctx.open_configured(max_scan_items=bad)
        except Exception as exc:  # noqa: BLE001 - the documented refusal
            ctx.log(f"  refused: {describe(exc)}")
        else:
            problems.append(("invalid_budget_accepted",
                             f"max_scan_items={bad} was accepted; the budget must be positive"))
    tag = f"{ctx.seed:016x}"
    items = [{"role": "user" if n % 2 == 0 else "assistant", "content": f"{tag} item {n}"}
             for n in range(budget + ctx.rng.randint(0, 3))]
    small = ctx.rng.randint(1, budget - 1)
    raised = 0
    try:
        for start, end in ((0, small), (small, len(items))):
            ctx.log(f"without a budget: add_items([{end - start} items])")
            await plain.session.add_items(items[start:end])
            await _judge_reads(ctx, bounded.session, items[:end], budget, problems)
        ctx.log("without a budget: get_items(); get_items(limit=-1)")
        for limit in (None, -1):
            got = await read_items(plain.session, limit)
            if [canonical(i) for i in got] != [canonical(i) for i in items]:
                problems.append(("unbudgeted_wrong", f"without a budget get_items(limit="
                                                     f"{limit}) returned {labels(got)}; "
                                                     f"expected {labels(items)}"))
    except Exception as exc:  # noqa: BLE001 - an unbudgeted read or write that raises
        raised += 1
        problems.append(("unbudgeted_raised",
                         f"a write or read without a budget raised {describe(exc)}"))
    refusals = sum(mode == "refused_within_budget" for mode, _ in problems)  # raised
    hangs = sum(mode == "read_hung" for mode, _ in problems)  # never answered: a wrong result
    return problems_trial(ctx, problems, Counts(wrong_result=hangs, raised=raised + refusals),
                          "bounded")

CHECK = CheckSpec(
    id=CHECK_ID,
    invariant="a read budget (max_scan_items=N) bounds a read's work and never changes what "
    "it returns: a budgeted get_items(limit=k) returns exactly the newest k items in order, "
    "never more than N, or refuses with an exception, and answers whenever the budget holds "
    "the result; a budget that is not positive is refused",
    fault="budgets 0 and -1 at construction; then histories of fewer and of at least N items "
    "read under budget N with limits 0, 1, N - 1, N, N + 1, more than stored, none and -1, "
    "each under a deadline; then unbudgeted reads with no limit and -1",
    params=(
        Param("budget", 4, 2, 50, "max_scan_items of the budgeted instance (N)"),
        trials_param(3),
    ),
    run_trial=run_trial,
    mutants=(
        "reference_zero_budget_means_unbounded",
        "encrypted_exhausted_budget_returns_newest_window",
    ),
    generated=(
        Selector("encrypted-sqlite", "EncryptedSession.__init__", "flip_comparison"),
        Selector("encrypted-sqlalchemy-sqlite", "EncryptedSession.__init__", "flip_comparison"),
    ),
    timeout_s=60.0,
    hang_invariant=True,
)
